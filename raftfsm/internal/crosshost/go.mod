module github.com/compactkit/compactkit/raftfsm/internal/crosshost

go 1.26.0

require (
	github.com/compactkit/compactkit v0.1.0
	github.com/compactkit/compactkit/raftfsm/etcdraft v0.1.0
	github.com/compactkit/compactkit/raftfsm/hraft v0.1.0
	github.com/stretchr/testify v1.12.1
	go.etcd.io/raft/v3 v3.7.0
)

require (
	github.com/armon/go-metrics v0.4.1 // indirect
	github.com/boltdb/bolt v1.3.1 // indirect
	github.com/fatih/color v1.13.0 // indirect
	github.com/fxamacker/cbor/v2 v2.9.6 // indirect
	github.com/google/btree v1.1.3 // indirect
	github.com/hashicorp/go-hclog v1.6.2 // indirect
	github.com/hashicorp/go-immutable-radix v1.0.0 // indirect
	github.com/hashicorp/go-metrics v0.5.4 // indirect
	github.com/hashicorp/go-msgpack/v2 v2.1.2 // indirect
	github.com/hashicorp/golang-lru v0.5.0 // indirect
	github.com/hashicorp/raft v1.7.3 // indirect
	github.com/hashicorp/raft-boltdb/v2 v2.3.1 // indirect
	github.com/mattn/go-colorable v0.1.12 // indirect
	github.com/mattn/go-isatty v0.0.14 // indirect
	github.com/x448/float16 v0.8.4 // indirect
	go.etcd.io/bbolt v1.3.5 // indirect
	go.yaml.in/yaml/v3 v3.0.5 // indirect
	golang.org/x/sys v0.13.0 // indirect
	google.golang.org/protobuf v1.36.11 // indirect
)

replace (
	github.com/compactkit/compactkit => ../../..
	github.com/compactkit/compactkit/raftfsm/etcdraft => ../../etcdraft
	github.com/compactkit/compactkit/raftfsm/hraft => ../../hraft
)
