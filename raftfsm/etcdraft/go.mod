module github.com/compactkit/compactkit/raftfsm/etcdraft

go 1.26.0

require (
	github.com/compactkit/compactkit v0.1.0
	github.com/stretchr/testify v1.12.1
	go.etcd.io/raft/v3 v3.7.0
	google.golang.org/protobuf v1.36.11
)

require (
	github.com/fxamacker/cbor/v2 v2.9.6 // indirect
	github.com/google/btree v1.1.3 // indirect
	github.com/x448/float16 v0.8.4 // indirect
	go.yaml.in/yaml/v3 v3.0.5 // indirect
)

replace github.com/compactkit/compactkit => ../..
