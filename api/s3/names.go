package s3

import (
	"strings"

	"github.com/cairnstore/cairn/workbench"
)

// The names a request gives: a bucket's (a workbench id of the key's root) and an object
// key (a file's path in it). S3's rules for them ("Bucket naming rules", "Naming Amazon
// S3 objects", Amazon S3 User Guide) are applied where a client relies on them; Cairn's
// own rules for a workbench id and a path (docs/workbench.md, common rules) decide what
// can be stored.

// MaxKeyBytes is S3's bound on an object key: 1,024 bytes of its UTF-8. A longer key is
// KeyTooLongError on every request that names one (checkKeyLength), read or write, as S3
// answers; Cairn's own bound on a path (meta.MaxPathBytes) is larger, so every key within
// it has a path length Cairn stores.
const MaxKeyBytes = 1024

// checkKeyLength refuses a key longer than MaxKeyBytes: KeyTooLongError. Every key a
// request names passes here where it enters: the path's (splitPath), a copy's source
// (copySource) and each entry of a DeleteObjects document.
func checkKeyLength(key string) error {
	if len(key) > MaxKeyBytes {
		return errorf(CodeKeyTooLong, "your key is too long: an object key is at most %d bytes of UTF-8, this one has %d", MaxKeyBytes, len(key))
	}
	return nil
}

// objectPath checks the key of a write (PutObject, CopyObject's target, a multipart
// upload's) as a Cairn path: InvalidArgument naming the rule for a key Cairn cannot store.
// A key ending in '/' is S3's folder marker ("dir/", what rclone and the S3 console make
// for an empty folder): a Cairn path is a file, and a folder exists while a file is under
// it, so there is nothing to store it as; the refusal says so.
func objectPath(key string) (string, error) {
	if strings.HasSuffix(key, "/") {
		return "", errorf(CodeInvalidArgument, "the object key ends in '/' (a folder marker): here a key is a file's path and a folder exists while it holds an object, so an empty folder is not stored; write the objects under it instead")
	}
	if err := workbench.ValidatePath("key", key); err != nil {
		return "", errorf(CodeInvalidArgument, "the object key is not a path Cairn can store: %s", err.Message)
	}
	return key, nil
}

// readPath is the path a read or a delete of key names; false when key is no path Cairn
// can store (objectPath: a folder marker "dir/", "a//b", "./x"). No object has such a
// key, so the request answers as for any key never written (lookup.absent: NoSuchKey; a
// delete deletes nothing), as S3 does, and never InvalidArgument: S3 clients read and
// delete folder markers as they walk a tree.
func readPath(key string) (string, bool) {
	path, err := objectPath(key)
	return path, err == nil
}

// maxBucketNameBytes is S3's bound on a bucket name (a DNS label).
const maxBucketNameBytes = 63

// Prefixes and suffixes S3 reserves: no bucket name starts or ends with one.
var (
	reservedBucketPrefixes = []string{"xn--", "sthree-", "amzn-s3-demo-"}
	reservedBucketSuffixes = []string{"-s3alias", "--ol-s3", "--x-s3", "--table-s3"}
)

// checkBucketName applies S3's bucket naming rules to a bucket CreateBucket makes, so
// that every S3 client can name it (virtual-hosted addressing puts it in a DNS name, and
// SDKs check it): at most 63 bytes of lower-case letters, digits and '-', starting and
// ending with a letter or digit, none of S3's reserved prefixes or suffixes;
// InvalidBucketName naming the rule otherwise. S3 also allows '.', which a workbench id
// cannot hold, so it is refused too. S3's least length, 3, is not applied: shorter
// names are valid workbench ids that clients address without trouble, and buckets made
// with them exist. Other requests name an existing workbench as it is (one made over
// REST may hold upper-case letters or '_'), as S3 still serves buckets named under its
// older rules.
func checkBucketName(name string) error {
	refuse := func(rule string) error {
		return errorf(CodeInvalidBucketName, "the specified bucket is not valid: a bucket name %s", rule)
	}
	if len(name) > maxBucketNameBytes {
		return refuse("is at most 63 bytes")
	}
	for i := 0; i < len(name); i++ {
		switch c := name[i]; {
		case c >= 'a' && c <= 'z' || c >= '0' && c <= '9':
		case c == '-':
			if i == 0 || i == len(name)-1 {
				return refuse("starts and ends with a lower-case letter or a digit")
			}
		case c == '.':
			return refuse("here holds no '.': it names a workbench, whose id cannot")
		default:
			return refuse("holds only lower-case letters, digits and '-'")
		}
	}
	for _, p := range reservedBucketPrefixes {
		if strings.HasPrefix(name, p) {
			return refuse("does not start with " + p)
		}
	}
	for _, s := range reservedBucketSuffixes {
		if strings.HasSuffix(name, s) {
			return refuse("does not end with " + s)
		}
	}
	return nil
}
