// SPDX-License-Identifier: Apache-2.0
/*
 * fencelock.js: nginx's offline fencing check (njs 0.7+, Debian 12's libnginx-mod-http-js).
 * contrib/nginx/README.md has the setup and what it guarantees.
 *
 * check(r), for auth_request: 204 when the request's Fencing-Signature is FENCE.SIGN's signature
 * of (Fencing-Lock, Fencing-Token) under one of the keys in $fencelock_keys (every *.key file:
 * the bytes of a --token-key file, one trailing newline removed, 16..1024 bytes; read on every
 * request, so a rotation is a file added or removed) and the token is not lower than the highest
 * this nginx accepted for that lock; a higher one becomes the new highest. Else 403 (the reason
 * in nginx's error log, at warn).
 *
 * The highest token per lock is a file in $fencelock_state (named by the SHA-256 of the lock
 * name), replaced by rename. njs 0.7.9 has no js_shared_dict_zone (njs 0.8.0 added it), and its
 * per-request VMs keep nothing across requests: a file is what is left, and it survives a
 * restart. The read, the comparison and the write run in one go of the worker's event loop (no
 * await between them), so with ONE worker process no other check interleaves; with several,
 * two workers could both pass the bar and the lower token could be recorded last.
 */
var fs = require('fs');
var crypto = require('crypto');

var MAX_NAME = 1024; /* fencelockd's default --max-key: a longer name is no lock's */

function readKeys(dir) {
    var keys = [];
    var names;
    try {
        names = fs.readdirSync(dir);
    } catch (e) {
        return keys;
    }
    names.sort();
    for (var i = 0; i < names.length; i++) {
        if (!/\.key$/.test(names[i]))
            continue;
        var b;
        try {
            b = fs.readFileSync(dir + '/' + names[i]);
        } catch (e) {
            continue;
        }
        if (b.length > 0 && b[b.length - 1] == 10)
            b = b.slice(0, b.length - 1);
        if (b.length >= 16 && b.length <= 1024)
            keys.push(b);
    }
    return keys;
}

/* Equal strings of the same length, in a time that does not depend on where they differ. */
function sameText(a, b) {
    if (a.length != b.length)
        return false;
    var d = 0;
    for (var i = 0; i < a.length; i++)
        d |= a.charCodeAt(i) ^ b.charCodeAt(i);
    return d === 0;
}

/* Decimal strings without leading zeros, compared exactly (tokens may pass 2^53). */
function cmpDecimal(a, b) {
    if (a.length != b.length)
        return a.length < b.length ? -1 : 1;
    return a < b ? -1 : a > b ? 1 : 0;
}

function check(r) {
    var lock = r.headersIn['Fencing-Lock'];
    var token = r.headersIn['Fencing-Token'];
    var sig = r.headersIn['Fencing-Signature'];
    var refuse = function(why) {
        r.warn('fencelock: refused: ' + why);
        r.return(403);
    };
    if (!lock || Buffer.byteLength(lock) > MAX_NAME)
        return refuse('no Fencing-Lock header, or longer than ' + MAX_NAME + ' bytes');
    if (!token || !/^[1-9][0-9]{0,19}$/.test(token))
        return refuse('Fencing-Token is not a decimal token');
    if (!sig || !/^[0-9a-fA-F]{64}$/.test(sig))
        return refuse('no Fencing-Signature of 64 hex digits');
    var keys = readKeys(r.variables.fencelock_keys);
    if (keys.length == 0) {
        r.error('fencelock: no usable *.key file in ' + r.variables.fencelock_keys +
                ': every request is refused');
        return r.return(403);
    }
    var msg = 'fencelock-token-v1:' + Buffer.byteLength(lock) + ':' + lock + ':' + token;
    var good = false;
    for (var i = 0; i < keys.length; i++) {
        var mac = crypto.createHmac('sha256', keys[i]).update(msg).digest('hex');
        if (sameText(mac, sig.toLowerCase()))
            good = true;
    }
    if (!good)
        return refuse('bad signature for token ' + token + ' of lock ' + lock);
    var path = r.variables.fencelock_state + '/' +
               crypto.createHash('sha256').update(lock).digest('hex');
    var seen = null;
    try {
        seen = fs.readFileSync(path, 'utf8').trim();
    } catch (e) {
        if (e.code !== 'ENOENT') {
            r.error('fencelock: cannot read ' + path + ': ' + e.message);
            return r.return(500);
        }
    }
    var c = seen === null ? 1 : cmpDecimal(token, seen);
    if (c < 0)
        return refuse('stale token ' + token + ' for lock ' + lock + ': token ' + seen +
                      ' was already seen');
    if (c > 0) {
        try {
            fs.writeFileSync(path + '.tmp', token);
            fs.renameSync(path + '.tmp', path);
        } catch (e) {
            r.error('fencelock: cannot record token ' + token + ' in ' + path + ': ' + e.message);
            return r.return(500);
        }
    }
    r.return(204);
}

export default {check: check};
