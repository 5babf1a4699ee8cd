#!/usr/bin/env python3
"""Makes botocore_signed.json: requests signed by botocore (Debian's python3-botocore),
the signer boto3 and the aws CLI use, at a fixed time, with the test key of
api/s3/sigv4_test.go. Run from api/s3: python3 testdata/botocore_sign.py > testdata/botocore_signed.json
The requests are signed at the time the script runs; the test sets its clock from each
request's X-Amz-Date.
"""
import json
import botocore
from botocore.auth import S3SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials

KEY, SECRET = "CAIRNTESTKEY0001", "test-secret-0123456789abcdefghijklmnopqrstu"
CASES = [
    ("PUT", "/bkt/empty.txt", b"", {"Content-Length": "0"}),
    ("PUT", "/bkt/a%20b/%C3%BC%2B~.txt", b"hello", {"Content-Type": "text/plain", "Content-MD5": "XUFAKrxLKna5cZ2REBfFkg=="}),
    ("GET", "/bkt?list-type=2&prefix=a%2Fb&delimiter=%2F&continuation-token=x%2By%3D", b"", {}),
    ("PUT", "/bkt/tab.txt", b"t", {"X-Amz-Meta-Cols": "a\tb  c"}),
]
out = {"botocore": botocore.__version__, "cases": []}
for method, path, body, hdrs in CASES:
    r = AWSRequest(method=method, url="http://127.0.0.1:9000" + path, data=body, headers=hdrs)
    S3SigV4Auth(Credentials(KEY, SECRET), "s3", "us-east-1").add_auth(r)
    out["cases"].append({"method": method, "url": r.url, "headers": dict(r.headers.items()), "body": body.decode()})
print(json.dumps(out, indent=1))
