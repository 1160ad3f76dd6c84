package floor

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// nginxConf serves root on 127.0.0.1:port with keep-alive connections
// that last the whole run and no access log; every file nginx writes (pid,
// error log, temp bodies) stays under the prefix.
const nginxConf = `worker_processes %d;
pid %[2]s/nginx.pid;
error_log %[2]s/error.log warn;
events { worker_connections 1024; }
http {
	access_log off;
	client_body_temp_path %[2]s/client_body;
	proxy_temp_path %[2]s/proxy;
	fastcgi_temp_path %[2]s/fastcgi;
	uwsgi_temp_path %[2]s/uwsgi;
	scgi_temp_path %[2]s/scgi;
	types { text/html html; text/css css; application/javascript js; }
	default_type application/octet-stream;
	sendfile on;
	keepalive_requests 1000000;
	keepalive_timeout 300s;
	server {
		listen 127.0.0.1:%[3]d;
		root %[4]s;
		location = /nginx_status { stub_status; }
	}
}
`

// server is an nginx child process serving the docs on loopback.
type server struct {
	addr string // 127.0.0.1:port
	cmd  *exec.Cmd
}

// startNginx starts nginx (killed when the benchmark ends) serving root
// on a free loopback port, and waits until it answers.
func startNginx(b *testing.B, root string, workers int) *server {
	b.Helper()
	bin, err := exec.LookPath("nginx")
	if err != nil {
		bin = "/usr/sbin/nginx"
		if _, err := os.Stat(bin); err != nil {
			b.Skip("floor: nginx not found (apt-get install nginx)")
		}
	}
	port := freePort(b)
	prefix := b.TempDir()
	conf := filepath.Join(prefix, "nginx.conf")
	if err := os.WriteFile(conf, fmt.Appendf(nil, nginxConf, workers, prefix, port, root), 0o644); err != nil {
		b.Fatal(err)
	}
	cmd := exec.Command(bin, "-c", conf, "-p", prefix, "-g", "daemon off;")
	// Its own process group, so that the workers can be killed with the
	// master if it does not stop them.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	s := &server{addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), cmd: cmd}
	b.Cleanup(s.stop)
	for deadline := time.Now().Add(10 * time.Second); ; {
		c, err := net.Dial("tcp", s.addr)
		if err == nil {
			c.Close()
			return s
		}
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(filepath.Join(prefix, "error.log"))
			b.Fatalf("floor: nginx did not start on %s: %v\n%s%s", s.addr, err, stderr.Bytes(), log)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// stop asks nginx to shut down (SIGTERM: the master stops its workers and
// exits) and kills its process group if it has not within 5 s; killing
// the master alone would leave the workers running.
func (s *server) stop() {
	pid := s.cmd.Process.Pid
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { _ = s.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		_ = syscall.Kill(-pid, syscall.SIGKILL)
		<-done
	}
}

func freePort(b *testing.B) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// cpuTicks is the CPU time (user + system, in clock ticks) nginx's master
// and its workers have used: the benchmark's getrusage does not count it,
// nginx being another process.
func (s *server) cpuTicks() int64 {
	master := s.cmd.Process.Pid
	total := procTicks(master)
	dirs, _ := os.ReadDir("/proc")
	for _, d := range dirs {
		pid, err := strconv.Atoi(d.Name())
		if err != nil || pid == master {
			continue
		}
		if ppid, ticks, ok := procStat(pid); ok && ppid == master {
			total += ticks
		}
	}
	return total
}

func procTicks(pid int) int64 {
	_, t, _ := procStat(pid)
	return t
}

// procStat reads a process's parent and its utime + stime from
// /proc/PID/stat.
func procStat(pid int) (ppid int, ticks int64, ok bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, 0, false
	}
	// The command name may hold spaces; the fields start after its ')'.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, 0, false
	}
	f := strings.Fields(string(b[i+1:]))
	// f[0] is field 3 (state): ppid is field 4, utime 14, stime 15.
	if len(f) < 13 {
		return 0, 0, false
	}
	ppid, _ = strconv.Atoi(f[1])
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return ppid, ut + st, true
}

// userHz is the unit of /proc/PID/stat's times (USER_HZ, 100 on Linux
// whatever the kernel's tick).
const userHz = 100

// accepts is how many connections nginx has accepted (its stub_status),
// not counting the connection that asks.
func (s *server) accepts(b *testing.B) int64 {
	c := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := c.Get("http://" + s.addr + "/nginx_status")
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	// "Active connections: 1 \nserver accepts handled requests\n 16 16 31 \n..."
	lines := strings.Split(string(body), "\n")
	if len(lines) < 3 {
		b.Fatalf("floor: nginx status: %q", body)
	}
	n, err := strconv.ParseInt(strings.Fields(lines[2])[0], 10, 64)
	if err != nil {
		b.Fatalf("floor: nginx status: %q", body)
	}
	return n - 1
}
