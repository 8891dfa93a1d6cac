package transport

import (
	"errors"
	"fmt"
	"net/http"

	ck "github.com/compactkit/compactkit"
	"github.com/compactkit/compactkit/index"
	"github.com/compactkit/compactkit/raftfsm"
)

// The endpoint paths.
const (
	PathPoll     = "/v1/poll"
	PathBlocks   = "/v1/blocks"
	PathOperator = "/v1/operator"
	PathStats    = "/v1/stats"
	PathQuery    = "/v1/query"
	PathIndex    = "/v1/index"
)

// Error codes carried by [ErrorBody.Code].
const (
	CodeBadRequest     = "bad_request"     // malformed or invalid request (400)
	CodeInvalidRequest = "invalid_request" // poll refused by the state machine (400)
	CodeNotLeader      = "not_leader"      // this node does not lead; see Leader (421)
	CodeNoLeader       = "no_leader"       // no leader known: retry later (503)
	CodeStale          = "stale_request"   // poll older than the worker's latest (409)
	CodeOperator       = "operator"        // operator command refused (422)
	CodeTimeout        = "timeout"         // the request's context ended (504)
	CodeInternal       = "internal"        // anything else (500)
	CodeNotFound       = "not_found"       // unknown path (404)
	CodeMethod         = "method"          // wrong HTTP method (405)
)

// Sentinel errors of the client, returned wrapped: test with errors.Is.
var (
	// ErrUnavailable reports a call that found no leader to serve it
	// within its retry budget.
	ErrUnavailable = errors.New("transport: no leader available")
	// ErrBadRequest reports a request the server refused as malformed or
	// invalid (HTTP 400).
	ErrBadRequest = errors.New("transport: bad request")
	// ErrServer reports a server-side failure (HTTP 5xx other than
	// unavailability) or an answer the client could not decode.
	ErrServer = errors.New("transport: server error")
)

// ErrorBody is the JSON body of every non-2xx answer.
type ErrorBody struct {
	// Code classifies the error (the Code* constants).
	Code string `json:"code"`
	// Error says what is wrong.
	Error string `json:"error"`
	// Leader is the base URL of the leader, on a 421 answer.
	Leader string `json:"leader,omitempty"`
}

// Error is a non-2xx answer, as the client returns it. It unwraps to the
// sentinel errors its code stands for (ErrBadRequest, ck.ErrRejected
// and raftfsm.ErrInvalidRequest for a refused poll, raftfsm.ErrStaleRequest,
// raftfsm.ErrOperator, ErrServer, ErrUnavailable).
type Error struct {
	// Status is the HTTP status code.
	Status int
	// Op is the endpoint path.
	Op string
	ErrorBody
}

// Error describes the answer.
func (e *Error) Error() string {
	return fmt.Sprintf("transport: %s: %d %s: %s", e.Op, e.Status, e.Code, e.ErrorBody.Error)
}

// Unwrap returns the sentinel errors the answer stands for.
func (e *Error) Unwrap() []error {
	switch e.Code {
	case CodeInvalidRequest:
		return []error{ErrBadRequest, raftfsm.ErrInvalidRequest, ck.ErrRejected}
	case CodeStale:
		return []error{raftfsm.ErrStaleRequest}
	case CodeOperator:
		return []error{raftfsm.ErrOperator}
	case CodeNotLeader, CodeNoLeader:
		return []error{ErrUnavailable}
	}
	switch {
	case e.Status == http.StatusBadRequest:
		if e.Op == PathPoll {
			return []error{ErrBadRequest, ck.ErrRejected}
		}
		return []error{ErrBadRequest}
	case e.Status >= 500:
		return []error{ErrServer}
	}
	return nil
}

// BlocksRequest is the body of POST /v1/blocks.
type BlocksRequest struct {
	Blocks []ck.BlockMeta `json:"blocks"`
}

// BlockResult is what became of one block of an add-blocks call.
type BlockResult struct {
	ID string `json:"id"`
	// Error is empty if the block entered the index, else why it did not.
	Error string `json:"error,omitempty"`
	// Duplicate reports a block refused as a duplicate (already added).
	Duplicate bool `json:"duplicate,omitempty"`
	// Queued reports that the block entered the compaction queue.
	Queued bool `json:"queued,omitempty"`
}

// Err returns the block's error: nil if it entered the index, an error
// wrapping index.ErrDuplicate for a duplicate.
func (r BlockResult) Err() error {
	switch {
	case r.Error == "":
		return nil
	case r.Duplicate:
		return fmt.Errorf("block %s: %s: %w", r.ID, r.Error, index.ErrDuplicate)
	default:
		return fmt.Errorf("block %s: %s", r.ID, r.Error)
	}
}

// BlocksResponse is the answer of POST /v1/blocks: one result per block,
// in order.
type BlocksResponse struct {
	Results []BlockResult `json:"results"`
}

// OperatorResult is the answer of POST /v1/operator.
type OperatorResult struct {
	// Index is the log index of the applied command.
	Index uint64 `json:"index"`
	// Count is the number of jobs retried or blocks re-queued.
	Count int `json:"count"`
	// Cancelled lists the jobs cancelled.
	Cancelled []string `json:"cancelled,omitempty"`
}

// QueryResult is the answer of GET /v1/query: the live blocks a query of a
// tenant over a time range reads.
type QueryResult struct {
	Blocks []ck.BlockMeta `json:"blocks"`
	// ReadAmplification is the number of objects the query reads.
	ReadAmplification int `json:"read_amplification"`
}

// IndexPage is the answer of GET /v1/index: live blocks in ID order.
type IndexPage struct {
	Blocks []ck.BlockMeta `json:"blocks"`
	// Next is the ID to pass as after for the next page; empty at the end.
	Next string `json:"next,omitempty"`
}

// MaxIndexPage bounds the blocks of one /v1/index page.
const MaxIndexPage = 10000
