package hraft

import (
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
)

// FastConfig returns a raft configuration tuned for clusters on one
// machine or a LAN with loopback-like latency (tests, examples): 150 ms
// heartbeat and election timeouts, so a lost leader is replaced in well
// under a second, and a silent logger. Production hosts should start from
// raft.DefaultConfig.
func FastConfig(id string) *raft.Config {
	c := raft.DefaultConfig()
	c.LocalID = raft.ServerID(id)
	c.HeartbeatTimeout = 150 * time.Millisecond
	c.ElectionTimeout = 150 * time.Millisecond
	c.LeaderLeaseTimeout = 100 * time.Millisecond
	c.CommitTimeout = 5 * time.Millisecond
	c.SnapshotInterval = 5 * time.Second
	c.SnapshotThreshold = 1024
	c.TrailingLogs = 1024
	c.Logger = hclog.NewNullLogger()
	return c
}
