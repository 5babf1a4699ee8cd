package ops

import (
	"errors"
	"fmt"
	"os"
	"syscall"
)

// CheckDataDir makes sure the data directory exists and this process can write it: it
// creates the directory when missing, then creates, syncs and removes a probe file in
// it. A directory that cannot be written (a read-only file system, no permission) is a
// *ConfigError naming --data-dir, which no retry mends; found here, before the node opens
// its Raft log, rather than as the log's failure. Other failures are returned wrapped.
func CheckDataDir(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return dataDirError(dir, err)
	}
	f, err := os.CreateTemp(dir, ".write-probe-*")
	if err != nil {
		return dataDirError(dir, err)
	}
	name := f.Name()
	err = f.Sync()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if rerr := os.Remove(name); err == nil {
		err = rerr
	}
	if err != nil {
		return dataDirError(dir, err)
	}
	return nil
}

// dataDirError is the error of a failed write to the data directory dir: a *ConfigError
// naming --data-dir when the file system or the permissions refuse writes (EROFS, EACCES,
// EPERM), else err wrapped with the directory.
func dataDirError(dir string, err error) error {
	var reason string
	switch {
	case errors.Is(err, syscall.EROFS):
		reason = "it is on a read-only file system"
	case errors.Is(err, syscall.EACCES), errors.Is(err, syscall.EPERM):
		reason = "this process may not write it: permission denied"
	default:
		return fmt.Errorf("data directory %s: %w", dir, err)
	}
	return &ConfigError{Field: "DataDir", Rule: "must be a directory this process can write (" + reason + ")", Value: dir}
}
