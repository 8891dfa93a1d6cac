package hraft

import (
	_ "github.com/hashicorp/raft"
	_ "github.com/hashicorp/raft-boltdb/v2"
	_ "github.com/stretchr/testify/require"
	_ "github.com/hashicorp/go-hclog"
)
