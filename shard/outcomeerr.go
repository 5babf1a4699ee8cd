package shard

// outcomeError returns a sentinel error with text msg that also matches implied (one of
// package outcome's values) with errors.Is. Each call returns a distinct value, so the
// sentinels stay distinct for errors.Is too.
func outcomeError(msg string, implied error) error {
	return &impliesError{msg: msg, implied: implied}
}

// impliesError is a sentinel of this package that implies an outcome.
type impliesError struct {
	msg     string
	implied error
}

func (e *impliesError) Error() string { return e.msg }

// Is reports whether target is the outcome e implies. (errors.Is compares e itself by
// identity before it asks.)
func (e *impliesError) Is(target error) bool { return target == e.implied }
