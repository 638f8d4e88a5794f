module github.com/fencelock/fencelock/examples/go

go 1.22

require github.com/fencelock/fencelock-go v0.0.0

// The client from this source tree: the example always runs against the code beside it.
replace github.com/fencelock/fencelock-go => ../../clients/go
