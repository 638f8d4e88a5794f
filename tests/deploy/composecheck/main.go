// SPDX-License-Identifier: Apache-2.0

// composecheck loads a Compose file the way `docker compose` does, with compose-go (the
// Compose specification's reference loader: the spec's JSON schema, then interpolation,
// anchors and merges, and the model's own checks), and prints what the tests need as JSON:
// each service's image, command and published ports. Exit status 1, with the loader's
// message, when the file does not validate.
//
//	composecheck FILE
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/compose-spec/compose-go/v2/loader"
	"github.com/compose-spec/compose-go/v2/types"
)

type service struct {
	Image   string   `json:"image"`
	Command []string `json:"command"`
	Ports   []string `json:"ports"`
}

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: composecheck FILE")
		os.Exit(2)
	}
	path, err := filepath.Abs(os.Args[1])
	if err != nil {
		fail(err)
	}
	content, err := os.ReadFile(path)
	if err != nil {
		fail(err)
	}
	details := types.ConfigDetails{
		WorkingDir:  filepath.Dir(path),
		ConfigFiles: []types.ConfigFile{{Filename: path, Content: content}},
		Environment: types.Mapping{},
	}
	project, err := loader.LoadWithContext(context.Background(), details, func(o *loader.Options) {
		o.SetProjectName("fencelock", false)
	})
	if err != nil {
		fail(err)
	}
	out := map[string]service{}
	for name, s := range project.Services {
		var ports []string
		for _, p := range s.Ports {
			ports = append(ports, fmt.Sprintf("%s:%s:%d", p.HostIP, p.Published, p.Target))
		}
		out[name] = service{Image: s.Image, Command: s.Command, Ports: ports}
	}
	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", "  ")
	if err := enc.Encode(map[string]any{"name": project.Name, "services": out}); err != nil {
		fail(err)
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "composecheck:", err)
	os.Exit(1)
}
