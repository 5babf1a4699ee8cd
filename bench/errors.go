package bench

import (
	"context"
	"errors"
	"fmt"
	"io/fs"

	"github.com/minio/minio-go/v7"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/cairnstore/cairn/api/client"
)

// Error classes that are not an HTTP answer.
const (
	// ClassNotSent is an open-loop operation that was due but never sent (see Load).
	ClassNotSent = "not sent"
	// ClassTimeout is an operation that hit Load.OpTimeout (or the run's deadline).
	ClassTimeout = "timeout"
	// ClassCanceled is an operation cut short because the run was cancelled.
	ClassCanceled = "canceled"
	// ClassIO is a local file-system error (the fsync baseline).
	ClassIO = "io"
	// ClassTransport is any other failure to get an answer: connection refused or reset,
	// a truncated body, a malformed response.
	ClassTransport = "transport"
)

// ErrorClass buckets err for the report: "HTTP <status> <code>" for a REST answer of the
// server and "MCP <code>" for an MCP tool error (the stable Workbench error code,
// docs/workbench.md#errors), "S3 <status> <code>" for an object store's answer and "etcd
// <gRPC code>" for an etcd server's (the baselines), else one of the Class* constants.
// Classes are coarse on purpose: a report lists them all.
func ErrorClass(err error) string {
	var ce *client.Error
	var me *MCPError
	var se minio.ErrorResponse
	var pe *fs.PathError
	switch {
	case errors.Is(err, errNotSent):
		return ClassNotSent
	case errors.As(err, &ce):
		return fmt.Sprintf("HTTP %d %s", ce.HTTPStatus, ce.Code)
	case errors.As(err, &me):
		return "MCP " + me.Code
	case errors.As(err, &se) && se.Code != "":
		return fmt.Sprintf("S3 %d %s", se.StatusCode, se.Code)
	case errors.Is(err, context.DeadlineExceeded):
		return ClassTimeout
	case errors.Is(err, context.Canceled):
		return ClassCanceled
	case errors.As(err, &pe):
		return ClassIO
	}
	if st, ok := status.FromError(err); ok && st.Code() != codes.OK && st.Code() != codes.Unknown {
		return "etcd " + st.Code().String()
	}
	return ClassTransport
}
