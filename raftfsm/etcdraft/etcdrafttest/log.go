package etcdrafttest

import (
	"io"
	"log"

	"go.etcd.io/raft/v3"
)

// quiet discards etcd-io/raft's log.
var quiet = &raft.DefaultLogger{Logger: log.New(io.Discard, "", 0)}
