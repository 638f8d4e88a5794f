# SPDX-License-Identifier: Apache-2.0
"""A throwaway nginx (Debian's) and the small backend behind it, for the fencing suite.

    be = Backend()                        # Python http.server on a free port, in a thread
    ng = Nginx(workdir, server_block)     # nginx.conf in a fresh temp dir; server_block is the
    ng.start(); ...; ng.stop()            # `server { }` body; stopped by PID (SIGQUIT, then
                                          # SIGKILL after 15 s); the temp dir is removed

nginx runs in the foreground (`daemon off`), one worker (contrib/nginx/README.md says why the
offline check needs exactly one), its pid, logs and temp files in the temp dir. Started as root,
its worker runs as `nobody`, so the temp dir (the offline check's keys and state) is that user's.

The backend keeps, in this process: `values` (PUT /res/LOCK: the body) and the shops (GET
/shop/S: the stock; POST /shop/S/sell with body "QTY_READ BUYER": stock = QTY_READ - 1 and the
buyer appended to the sales). Whatever reaches it passed nginx's check.
"""

import http.server
import os
import pwd
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
import urllib.parse

from server import free_port

NGINX = os.environ.get("FENCELOCK_NGINX", "/usr/sbin/nginx")
JS_MODULE = "/usr/lib/nginx/modules/ngx_http_js_module.so"


def available(js=False):
    """None if nginx (and with js, its njs module) can run here, else why not."""
    if not os.access(NGINX, os.X_OK):
        return "nginx is not installed (scripts/deps.sh test installs it)"
    if js and not os.path.exists(JS_MODULE):
        return "njs (libnginx-mod-http-js) is not installed (scripts/deps.sh test installs it)"
    return None


class Backend:
    def __init__(self):
        self.values = {}
        self.shops = {}
        self.mu = threading.Lock()
        be = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *a):
                pass

            def _answer(self, code, body=b""):
                self.send_response(code)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def _body(self):
                return self.rfile.read(int(self.headers.get("Content-Length") or 0)).decode()

            def do_PUT(self):
                parts = self.path.split("/")
                if len(parts) == 3 and parts[1] == "res":
                    with be.mu:
                        be.values[urllib.parse.unquote(parts[2])] = self._body()
                    return self._answer(200, b"stored\n")
                self._answer(404)

            def do_GET(self):
                parts = self.path.split("/")
                if len(parts) == 3 and parts[1] == "shop":
                    with be.mu:
                        stock = be.shops[urllib.parse.unquote(parts[2])][0]
                    return self._answer(200, b"%d" % stock)
                self._answer(404)

            def do_POST(self):
                parts = self.path.split("/")
                if len(parts) == 4 and parts[1] == "shop" and parts[3] == "sell":
                    qty, buyer = self._body().split(" ", 1)
                    with be.mu:
                        shop = be.shops[urllib.parse.unquote(parts[2])]
                        shop[0] = int(qty) - 1
                        shop[1].append(buyer)
                    return self._answer(200, b"sold\n")
                self._answer(404)

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", free_port()), Handler)
        self.httpd.daemon_threads = True
        self.port = self.httpd.server_address[1]
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def stop(self):
        self.httpd.shutdown()
        self.httpd.server_close()


CONF = """
worker_processes 1;
%(user)s
pid %(dir)s/nginx.pid;
error_log %(dir)s/error.log info;
%(load)s
events { worker_connections 256; }
http {
    access_log %(dir)s/access.log;
    client_body_temp_path %(dir)s/tmp/body;
    proxy_temp_path %(dir)s/tmp/proxy;
    fastcgi_temp_path %(dir)s/tmp/fastcgi;
    uwsgi_temp_path %(dir)s/tmp/uwsgi;
    scgi_temp_path %(dir)s/tmp/scgi;
%(http)s
    server {
        listen 127.0.0.1:%(port)d;
%(server)s
    }
}
"""


class Nginx:
    def __init__(self, log_dir, http_block, server_block, js=False, start_timeout=30.0):
        self.log_dir = log_dir
        self.http_block, self.server_block, self.js = http_block, server_block, js
        self.start_timeout = start_timeout
        self.port = free_port()
        self.dir = tempfile.mkdtemp(prefix="fencelock-nginx-")
        os.chmod(self.dir, 0o755)
        os.mkdir(os.path.join(self.dir, "tmp"))
        self.user = None
        if os.geteuid() == 0:
            self.user = pwd.getpwnam("nobody")
            os.chown(self.dir, self.user.pw_uid, self.user.pw_gid)
            os.chown(os.path.join(self.dir, "tmp"), self.user.pw_uid, self.user.pw_gid)
        self.proc = None

    def path(self, name):
        return os.path.join(self.dir, name)

    def own(self, path):
        """Give a file or dir of the temp dir to the worker's user."""
        if self.user is not None:
            os.chown(path, self.user.pw_uid, self.user.pw_gid)

    def start(self):
        conf = CONF % {"dir": self.dir, "port": self.port,
                       "user": "user nobody nogroup;" if self.user else "",
                       "load": "load_module %s;" % JS_MODULE if self.js else "",
                       "http": self.http_block % {"dir": self.dir},
                       "server": self.server_block % {"dir": self.dir}}
        with open(self.path("nginx.conf"), "w") as f:
            f.write(conf)
        log = open(os.path.join(self.log_dir, "nginx.out"), "ab")
        try:
            self.proc = subprocess.Popen(
                [NGINX, "-p", self.dir, "-c", self.path("nginx.conf"), "-e",
                 self.path("error.log"), "-g", "daemon off;"],
                stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        finally:
            log.close()
        deadline = time.monotonic() + self.start_timeout
        while True:
            if self.proc.poll() is not None:
                raise RuntimeError("nginx exited with %s at start:\n%s"
                                   % (self.proc.returncode, self.log_tail()))
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                return self
            except OSError:
                if time.monotonic() > deadline:
                    raise RuntimeError("nginx not listening after %.0f s" % self.start_timeout)
                time.sleep(0.05)

    def stop(self, timeout=15.0):
        try:
            if self.proc is not None and self.proc.poll() is None:
                os.kill(self.proc.pid, signal.SIGQUIT)
                try:
                    self.proc.wait(timeout)
                except subprocess.TimeoutExpired:
                    os.killpg(self.proc.pid, signal.SIGKILL)
                    self.proc.wait(10)
                    raise RuntimeError("nginx ignored SIGQUIT for %.0f s; killed" % timeout)
        finally:
            try:
                shutil.copy(self.path("error.log"), os.path.join(self.log_dir, "nginx-error.log"))
            except OSError:
                pass
            shutil.rmtree(self.dir, ignore_errors=True)

    def log_tail(self, n=30):
        for p in (self.path("error.log"), os.path.join(self.log_dir, "nginx-error.log")):
            try:
                with open(p, "rb") as f:
                    return "\n".join(f.read().decode("utf-8", "replace").splitlines()[-n:])
            except OSError:
                continue
        return ""
