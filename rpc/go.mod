module github.com/compactkit/compactkit/rpc

go 1.26.0

require (
	connectrpc.com/connect v1.21.1
	github.com/compactkit/compactkit v0.1.0
	github.com/stretchr/testify v1.12.1
	google.golang.org/genproto/googleapis/rpc v0.0.0-20261110000943-09e21b237f2c
	google.golang.org/protobuf v1.36.12
)

require (
	github.com/fxamacker/cbor/v2 v2.9.6 // indirect
	github.com/google/btree v1.1.3 // indirect
	github.com/x448/float16 v0.8.4 // indirect
	go.yaml.in/yaml/v3 v3.0.5 // indirect
)

replace github.com/compactkit/compactkit => ../
