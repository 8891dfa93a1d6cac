package rpc

import (
	"errors"

	"connectrpc.com/connect"
	"google.golang.org/genproto/googleapis/rpc/errdetails"

	pb "github.com/compactkit/compactkit/rpc/gen/compactkit/v1"
)

// errorInfo returns the ErrorInfo detail of a refusal.
func errorInfo(reason string) *errdetails.ErrorInfo {
	return &errdetails.ErrorInfo{Reason: reason, Domain: ErrorDomain}
}

// refusalReason returns the reason of err's ErrorInfo of ErrorDomain, or
// "" if it has none.
func refusalReason(ce *connect.Error) string {
	for _, d := range ce.Details() {
		v, err := d.Value()
		if err != nil {
			continue
		}
		if info, ok := v.(*errdetails.ErrorInfo); ok && info.GetDomain() == ErrorDomain {
			return info.GetReason()
		}
	}
	return ""
}

// notLeaderDetail returns err's NotLeader detail, or nil.
func notLeaderDetail(ce *connect.Error) *pb.NotLeader {
	for _, d := range ce.Details() {
		v, err := d.Value()
		if err != nil {
			continue
		}
		if nl, ok := v.(*pb.NotLeader); ok {
			return nl
		}
	}
	return nil
}

// asConnect returns err's *connect.Error, or nil.
func asConnect(err error) *connect.Error {
	var ce *connect.Error
	if errors.As(err, &ce) {
		return ce
	}
	return nil
}
