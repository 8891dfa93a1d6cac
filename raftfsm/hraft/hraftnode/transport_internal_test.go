package hraftnode

import (
	"testing"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	"github.com/stretchr/testify/require"
)

// The node's TCP transport refuses to pipeline: raft replicates one append
// at a time instead of through the pipeline that can deadlock.
func TestTCPTransportDoesNotPipeline(t *testing.T) {
	tr, err := newTCPTransport("127.0.0.1:0", hclog.NewNullLogger())
	require.NoError(t, err)
	defer tr.Close()
	p, err := tr.AppendEntriesPipeline("peer", tr.LocalAddr())
	if p != nil {
		defer p.Close()
	}
	require.ErrorIs(t, err, raft.ErrPipelineReplicationNotSupported)
}
