package e2e

import (
	"context"
	"encoding/json"
	"net/url"
	"os"
	"os/exec"
	"testing"

	"github.com/stretchr/testify/require"

	ck "github.com/compactkit/compactkit"
	"github.com/compactkit/compactkit/leader/leadertest"
	"github.com/compactkit/compactkit/rpc"
	"github.com/compactkit/compactkit/rpc/internal/rpctest"
)

// python returns a Python 3 with grpcio and grpc_tools (Debian's
// python3-grpcio and python3-grpc-tools; COMPACTKIT_PYTHON names another).
// Without one the test is skipped, unless COMPACTKIT_REQUIRE_PYTHON is
// set: then it fails.
func python(t *testing.T) string {
	t.Helper()
	candidates := []string{"/usr/bin/python3", "python3"}
	if p := os.Getenv("COMPACTKIT_PYTHON"); p != "" {
		candidates = []string{p}
	}
	for _, p := range candidates {
		if exec.Command(p, "-c", "import grpc, grpc_tools.protoc").Run() == nil {
			return p
		}
	}
	if os.Getenv("COMPACTKIT_REQUIRE_PYTHON") != "" {
		t.Fatal("no python3 with grpcio and grpc_tools (apt-get install python3-grpcio python3-grpc-tools)")
	}
	// Skipped, saying so, only on a machine without them and outside CI:
	// CI installs both and sets COMPACTKIT_REQUIRE_PYTHON, which makes their
	// absence a failure above.
	t.Skip("no python3 with grpcio and grpc_tools; set COMPACTKIT_REQUIRE_PYTHON to fail instead")
	return ""
}

// A worker in Python, its stubs generated from the .proto now, starts at
// a node that does not lead, follows it to the leader, takes a job and
// reports it completed.
func TestPythonWorker(t *testing.T) {
	py := python(t)
	gen := t.TempDir()
	out, err := exec.Command(py, "-m", "grpc_tools.protoc", "-I", "../../proto", "-I", "testdata",
		"--python_out="+gen, "--grpc_python_out="+gen, "compactkit/v1/leader.proto", "status.proto").CombinedOutput()
	require.NoError(t, err, "%s", out)

	l := rpctest.NewLeader(t)
	lead := rpctest.Serve(t, rpc.NewServer(rpc.NewHandler(l.Svc)))
	follower := rpctest.NewFollower(t, l.FSM, "n1", "10.0.0.1:7000")
	fsrv := rpctest.Serve(t, rpc.NewServer(rpc.NewHandler(follower, rpc.WithLeaderURL(func(string, string) string { return lead.URL }))))
	c, err := rpc.NewClient([]string{lead.URL})
	require.NoError(t, err)
	_, err = c.AddBlocks(context.Background(), []ck.BlockMeta{leadertest.Block("seg-1", "acme", 0, 0), leadertest.Block("seg-2", "acme", 0, 1e9)})
	require.NoError(t, err)

	u, err := url.Parse(fsrv.URL)
	require.NoError(t, err)
	cmd := exec.Command(py, "testdata/worker.py", gen, u.Host, "0", "2000000000")
	out, err = cmd.Output()
	var stderr []byte
	if ee, ok := err.(*exec.ExitError); ok {
		stderr = ee.Stderr
	}
	require.NoError(t, err, "%s", stderr)
	var got struct {
		Follows int      `json:"follows"`
		Sources []string `json:"sources"`
		Output  string   `json:"output"`
		Outcome string   `json:"outcome"`
	}
	require.NoError(t, json.Unmarshal(out, &got), "%s", out)
	require.Equal(t, 1, got.Follows)
	require.Equal(t, []string{"seg-1", "seg-2"}, got.Sources)
	require.Equal(t, "OUTCOME_COMPLETED", got.Outcome)

	view := l.FSM.Index()
	defer view.Close()
	require.True(t, view.Live(got.Output), "the output %s is in the index", got.Output)
	require.False(t, view.Live("seg-1"))
}
