package promtest

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/etcd-operator/etcd-operator/internal/test/testenv"
)

// Server is a running Prometheus.
type Server struct {
	URL     string // http://host:port
	LogPath string
	cmd     *exec.Cmd
	done    chan struct{}
	hc      *http.Client
}

// Start runs prometheus on host with the given configuration file contents; files are
// written beside it first (rule files the configuration names). It is stopped when the
// test ends. host must be a test-owned address (the bench's network), never a host
// interface the machine serves on.
func Start(t testing.TB, host string, config []byte, files map[string][]byte) *Server {
	t.Helper()
	bin := Prometheus(t)
	dir := t.TempDir()
	for name, data := range files {
		WriteFile(t, dir, name, data)
	}
	cfg := WriteFile(t, dir, "prometheus.yml", config)
	s := &Server{LogPath: filepath.Join(dir, "prometheus.log"), done: make(chan struct{}),
		hc: &http.Client{Timeout: 10 * time.Second}}
	l, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	s.URL = "http://" + addr
	logf, err := os.Create(s.LogPath)
	if err != nil {
		t.Fatal(err)
	}
	s.cmd = exec.Command(bin, "--config.file="+cfg, "--storage.tsdb.path="+filepath.Join(dir, "data"),
		"--web.listen-address="+addr, "--log.level=info")
	s.cmd.Dir = dir
	s.cmd.Stdout, s.cmd.Stderr = logf, logf
	// Its own process group, killed with the test binary if that dies without cleanups.
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := s.cmd.Start(); err != nil {
		logf.Close()
		t.Fatal(err)
	}
	go func() { _ = s.cmd.Wait(); logf.Close(); close(s.done) }()
	t.Cleanup(func() {
		testenv.StopProcess(s.cmd.Process, s.done, 10*time.Second)
		if t.Failed() {
			if b, err := os.ReadFile(s.LogPath); err == nil {
				t.Logf("prometheus log (last 4 KiB):\n%s", tail(b, 4096))
			}
		}
	})
	deadline := time.Now().Add(time.Minute)
	for {
		select {
		case <-s.done:
			b, _ := os.ReadFile(s.LogPath)
			t.Fatalf("prometheus exited: %s", tail(b, 4096))
		default:
		}
		if resp, err := s.hc.Get(s.URL + "/-/ready"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return s
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("prometheus not ready on %s within a minute", s.URL)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func tail(b []byte, n int) []byte {
	if len(b) > n {
		return b[len(b)-n:]
	}
	return b
}

// get calls the HTTP API and decodes its data field into v.
func (s *Server) get(ctx context.Context, path string, q url.Values, v any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.URL+path+"?"+q.Encode(), nil)
	if err != nil {
		return err
	}
	resp, err := s.hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 32<<20))
	if err != nil {
		return err
	}
	var r struct {
		Status string          `json:"status"`
		Error  string          `json:"error"`
		Data   json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(body, &r); err != nil {
		return fmt.Errorf("%s: HTTP %d: %w", path, resp.StatusCode, err)
	}
	if r.Status != "success" {
		return fmt.Errorf("%s: %s", path, r.Error)
	}
	return json.Unmarshal(r.Data, v)
}

// Sample is one element of an instant vector.
type Sample struct {
	Metric map[string]string `json:"metric"`
	Value  float64
}

// Query runs an instant query; a result that is not a vector (a scalar) is returned as
// one sample without labels.
func (s *Server) Query(ctx context.Context, q string) ([]Sample, error) {
	var d struct {
		ResultType string          `json:"resultType"`
		Result     json.RawMessage `json:"result"`
	}
	if err := s.get(ctx, "/api/v1/query", url.Values{"query": {q}}, &d); err != nil {
		return nil, err
	}
	parse := func(v []any) float64 {
		if len(v) == 2 {
			if str, ok := v[1].(string); ok {
				f, _ := strconv.ParseFloat(str, 64)
				return f
			}
		}
		return 0
	}
	switch d.ResultType {
	case "vector":
		var raw []struct {
			Metric map[string]string `json:"metric"`
			Value  []any             `json:"value"`
		}
		if err := json.Unmarshal(d.Result, &raw); err != nil {
			return nil, err
		}
		out := make([]Sample, len(raw))
		for i, r := range raw {
			out[i] = Sample{Metric: r.Metric, Value: parse(r.Value)}
		}
		return out, nil
	case "scalar":
		var v []any
		if err := json.Unmarshal(d.Result, &v); err != nil {
			return nil, err
		}
		return []Sample{{Value: parse(v)}}, nil
	}
	return nil, fmt.Errorf("query %q: result type %s", q, d.ResultType)
}

// Alert is an alert of /api/v1/alerts: pending or firing.
type Alert struct {
	Labels   map[string]string `json:"labels"`
	State    string            `json:"state"`
	ActiveAt time.Time         `json:"activeAt"`
}

// Alerts returns the pending and firing alerts.
func (s *Server) Alerts(ctx context.Context) ([]Alert, error) {
	var d struct {
		Alerts []Alert `json:"alerts"`
	}
	err := s.get(ctx, "/api/v1/alerts", nil, &d)
	return d.Alerts, err
}

// Target is an active scrape target.
type Target struct {
	Labels     map[string]string `json:"labels"`
	ScrapePool string            `json:"scrapePool"`
	ScrapeURL  string            `json:"scrapeUrl"`
	Health     string            `json:"health"`
	LastError  string            `json:"lastError"`
}

// Targets returns the active targets.
func (s *Server) Targets(ctx context.Context) ([]Target, error) {
	var d struct {
		ActiveTargets []Target `json:"activeTargets"`
	}
	err := s.get(ctx, "/api/v1/targets", url.Values{"state": {"active"}}, &d)
	return d.ActiveTargets, err
}
