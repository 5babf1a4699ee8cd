package ops

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
)

func TestBlobTargetParsesEveryForm(t *testing.T) {
	tests := []struct {
		name     string
		blob     string
		endpoint string
		want     BlobTarget
	}{
		{
			name: "dir is the data directory's blobs folder",
			blob: "dir",
			want: BlobTarget{Kind: BlobDir, Dir: filepath.Join("/data", "blobs")},
		},
		{
			name: "dir:// with an absolute path keeps the path",
			blob: "dir:///srv/cairn/blobs",
			want: BlobTarget{Kind: BlobDir, Dir: "/srv/cairn/blobs"},
		},
		{
			name: "dir:// with a relative path keeps it relative",
			blob: "dir://blobs",
			want: BlobTarget{Kind: BlobDir, Dir: "blobs"},
		},
		{
			name: "s3 with a bucket alone has no prefix",
			blob: "s3://cairn", endpoint: "http://127.0.0.1:9000",
			want: BlobTarget{Kind: BlobS3, Bucket: "cairn", Endpoint: "127.0.0.1:9000", Region: DefaultS3Region, CreateBucket: true},
		},
		{
			name: "s3 with a bucket and a trailing slash has no prefix",
			blob: "s3://cairn/", endpoint: "http://127.0.0.1:9000",
			want: BlobTarget{Kind: BlobS3, Bucket: "cairn", Endpoint: "127.0.0.1:9000", Region: DefaultS3Region, CreateBucket: true},
		},
		{
			name: "s3 with a nested prefix keeps it without the trailing slash",
			blob: "s3://cairn.blobs-1/prod/eu/", endpoint: "https://s3.eu-west-1.amazonaws.com",
			want: BlobTarget{Kind: BlobS3, Bucket: "cairn.blobs-1", Prefix: "prod/eu", Endpoint: "s3.eu-west-1.amazonaws.com", Secure: true, Region: DefaultS3Region, CreateBucket: true},
		},
		{
			name: "an https endpoint with a port and a trailing slash selects TLS",
			blob: "s3://cairn/p", endpoint: "https://minio.internal:9443/",
			want: BlobTarget{Kind: BlobS3, Bucket: "cairn", Prefix: "p", Endpoint: "minio.internal:9443", Secure: true, Region: DefaultS3Region, CreateBucket: true},
		},
		{
			name: "an IPv6 endpoint keeps its brackets",
			blob: "s3://cairn", endpoint: "http://[::1]:9000",
			want: BlobTarget{Kind: BlobS3, Bucket: "cairn", Endpoint: "[::1]:9000", Region: DefaultS3Region, CreateBucket: true},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := DefaultConfig()
			c.DataDir = "/data"
			c.Blob = tt.blob
			c.S3Endpoint = tt.endpoint
			if err := c.Validate(); err != nil {
				t.Fatalf("Validate: %v", err)
			}
			got, err := c.BlobTarget()
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Fatalf("got  %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

func TestBlobTargetCarriesRegionAndCreateBucket(t *testing.T) {
	c := DefaultConfig()
	c.Blob, c.S3Endpoint, c.S3Region, c.S3CreateBucket = "s3://cairn", "http://localhost:9000", "eu-central-1", false
	got, err := c.BlobTarget()
	if err != nil {
		t.Fatal(err)
	}
	if got.Region != "eu-central-1" || got.CreateBucket {
		t.Fatalf("got %+v", got)
	}
}

func TestValidateBlobRules(t *testing.T) {
	tests := []struct {
		name     string
		blob     string
		endpoint string
		region   string // DefaultS3Region when empty
		field    string
		hidden   string // must not appear in the message (a secret)
	}{
		{name: "an unknown scheme is rejected", blob: "gs://cairn", endpoint: "http://h:1", field: "Blob"},
		{name: "an empty blob setting is rejected", blob: "", field: "Blob"},
		{name: "a bare path is rejected (dir:// names one)", blob: "/srv/blobs", field: "Blob"},
		{name: "dir:// without a path is rejected", blob: "dir://", field: "Blob"},
		{name: "s3 without a bucket is rejected", blob: "s3://", endpoint: "http://h:1", field: "Blob"},
		{name: "s3 with an upper-case bucket is rejected", blob: "s3://Cairn", endpoint: "http://h:1", field: "Blob"},
		{name: "s3 with a two-letter bucket is rejected", blob: "s3://ab", endpoint: "http://h:1", field: "Blob"},
		{name: "s3 with a bucket that looks like an IP address is rejected", blob: "s3://192.168.1.1", endpoint: "http://h:1", field: "Blob"},
		{name: "s3 with an underscore in the bucket is rejected", blob: "s3://cairn_blobs", endpoint: "http://h:1", field: "Blob"},
		{name: "s3 with a bucket ending in a dash is rejected", blob: "s3://cairn-", endpoint: "http://h:1", field: "Blob"},
		{name: "s3 with an empty prefix segment is rejected", blob: "s3://cairn/a//b", endpoint: "http://h:1", field: "Blob"},
		{name: "s3 with a double trailing slash is rejected", blob: "s3://cairn//", endpoint: "http://h:1", field: "Blob"},
		{name: "s3 with a dot-dot prefix segment is rejected", blob: "s3://cairn/a/../b", endpoint: "http://h:1", field: "Blob"},
		{name: "s3 with a backslash in the prefix is rejected", blob: `s3://cairn/a\b`, endpoint: "http://h:1", field: "Blob"},
		{name: "s3 with an over-long prefix is rejected", blob: "s3://cairn/" + strings.Repeat("p", MaxS3PrefixBytes+1), endpoint: "http://h:1", field: "Blob"},
		{name: "s3 with a query is rejected", blob: "s3://cairn/p?region=x", endpoint: "http://h:1", field: "Blob"},
		{name: "s3 with credentials in the URL is rejected without echoing them", blob: "s3://AKIA:hunter2@cairn/p", endpoint: "http://h:1", field: "Blob", hidden: "hunter2"},
		{name: "s3 without an endpoint is rejected", blob: "s3://cairn", field: "S3Endpoint"},
		{name: "an endpoint without a scheme is rejected", blob: "s3://cairn", endpoint: "127.0.0.1:9000", field: "S3Endpoint"},
		{name: "an endpoint with another scheme is rejected", blob: "s3://cairn", endpoint: "ftp://127.0.0.1:9000", field: "S3Endpoint"},
		{name: "an endpoint with a path is rejected", blob: "s3://cairn", endpoint: "http://127.0.0.1:9000/cairn", field: "S3Endpoint"},
		{name: "an endpoint with a query is rejected", blob: "s3://cairn", endpoint: "http://127.0.0.1:9000?x=1", field: "S3Endpoint"},
		{name: "an endpoint without a host is rejected", blob: "s3://cairn", endpoint: "http://:9000", field: "S3Endpoint"},
		{name: "an endpoint with a named port is rejected", blob: "s3://cairn", endpoint: "http://minio:http", field: "S3Endpoint"},
		{name: "an endpoint with port 0 is rejected", blob: "s3://cairn", endpoint: "http://minio:0", field: "S3Endpoint"},
		{name: "an endpoint with an empty port is rejected", blob: "s3://cairn", endpoint: "http://minio:", field: "S3Endpoint"},
		{name: "an endpoint with credentials is rejected without echoing them", blob: "s3://cairn", endpoint: "http://AKIA:hunter2@minio:9000", field: "S3Endpoint", hidden: "hunter2"},
		{name: "an endpoint with the dir backend is rejected", blob: "dir", endpoint: "http://minio:9000", field: "S3Endpoint"},
		{name: "an empty region is rejected", blob: "s3://cairn", endpoint: "http://h:1", region: "-", field: "S3Region"},
		{name: "a region with a space is rejected", blob: "s3://cairn", endpoint: "http://h:1", region: "us east", field: "S3Region"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := DefaultConfig()
			c.Blob, c.S3Endpoint = tt.blob, tt.endpoint
			switch tt.region {
			case "":
			case "-":
				c.S3Region = ""
			default:
				c.S3Region = tt.region
			}
			err := c.Validate()
			var ce *ConfigError
			if !errors.As(err, &ce) {
				t.Fatalf("Validate() = %v, want a *ConfigError", err)
			}
			if ce.Field != tt.field || ce.Rule == "" {
				t.Fatalf("got field %q rule %q (%v), want field %q with a rule", ce.Field, ce.Rule, err, tt.field)
			}
			if tt.hidden != "" && strings.Contains(err.Error(), tt.hidden) {
				t.Fatalf("message %q shows the secret %q", err, tt.hidden)
			}
			if _, terr := c.BlobTarget(); terr == nil {
				t.Fatalf("BlobTarget accepted what Validate rejects: %v", err)
			}
		})
	}
}

func TestS3SettingsComeFromEveryLayer(t *testing.T) {
	file := writeYAML(t, "blob: s3://from-yaml/p\ns3_endpoint: http://127.0.0.1:9000\ns3_create_bucket: false\n")
	tests := []struct {
		name   string
		args   []string
		env    map[string]string
		bucket string
		create bool
	}{
		{name: "the yaml file sets the bucket and turns bucket creation off",
			args: []string{"--config", file}, bucket: "from-yaml", create: false},
		{name: "the environment turns bucket creation back on",
			args: []string{"--config", file}, env: map[string]string{"CAIRN_S3_CREATE_BUCKET": "true", "CAIRN_BLOB": "s3://from-env"},
			bucket: "from-env", create: true},
		{name: "a bare boolean flag overrides the environment",
			args: []string{"--config", file, "--s3-create-bucket", "--blob", "s3://from-flag"}, env: map[string]string{"CAIRN_S3_CREATE_BUCKET": "false"},
			bucket: "from-flag", create: true},
		{name: "a flag set to false overrides the default",
			args: []string{"--blob=s3://from-flag", "--s3-endpoint=http://h:1", "--s3-create-bucket=false"}, bucket: "from-flag", create: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := load(t, tt.args, env(tt.env))
			if err != nil {
				t.Fatal(err)
			}
			tg, err := cfg.BlobTarget()
			if err != nil {
				t.Fatal(err)
			}
			if tg.Kind != BlobS3 || tg.Bucket != tt.bucket || tg.CreateBucket != tt.create {
				t.Fatalf("got %+v, want bucket %q create %v", tg, tt.bucket, tt.create)
			}
		})
	}
}

func TestS3ConfigErrorsNameTheSource(t *testing.T) {
	tests := []struct {
		name   string
		args   []string
		env    map[string]string
		source string
		field  string
	}{
		{name: "a bad blob flag names the flag", args: []string{"--blob", "s3://Bad"}, source: "--blob", field: "Blob"},
		{name: "a bad endpoint variable names the variable", args: []string{"--blob", "s3://cairn"},
			env: map[string]string{"CAIRN_S3_ENDPOINT": "minio:9000"}, source: "CAIRN_S3_ENDPOINT", field: "S3Endpoint"},
		{name: "an unparsable boolean names the variable", env: map[string]string{"CAIRN_S3_CREATE_BUCKET": "maybe"},
			source: "CAIRN_S3_CREATE_BUCKET", field: "S3CreateBucket"},
		{name: "a missing endpoint says which flag sets it", args: []string{"--blob", "s3://cairn"}, source: "", field: "S3Endpoint"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := load(t, tt.args, env(tt.env))
			var ce *ConfigError
			if !errors.As(err, &ce) {
				t.Fatalf("got %v, want a *ConfigError", err)
			}
			if ce.Source != tt.source || ce.Field != tt.field {
				t.Fatalf("got source %q field %q (%v), want %q %q", ce.Source, ce.Field, err, tt.source, tt.field)
			}
			if ce.Field == "S3Endpoint" && ce.Source == "" && !strings.Contains(err.Error(), "--s3-endpoint") {
				t.Fatalf("message %q does not say how to set the endpoint", err)
			}
		})
	}
}

func TestLoadCredentials(t *testing.T) {
	tests := []struct {
		name    string
		env     map[string]string
		want    Credentials
		wantErr bool
	}{
		{name: "no variables means anonymous requests", want: Credentials{}},
		{name: "both variables are read",
			env:  map[string]string{EnvS3AccessKey: "AKIA", EnvS3SecretKey: "s3cr3t"},
			want: Credentials{S3AccessKey: "AKIA", S3SecretKey: "s3cr3t"}},
		{name: "an access key without a secret is an error",
			env: map[string]string{EnvS3AccessKey: "AKIA"}, wantErr: true},
		{name: "a secret without an access key is an error",
			env: map[string]string{EnvS3SecretKey: "s3cr3t"}, wantErr: true},
		{name: "CAIRN_ variables are not credentials",
			env: map[string]string{"CAIRN_S3_ACCESS_KEY": "AKIA", "CAIRN_S3_SECRET_KEY": "s3cr3t"}, want: Credentials{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := LoadCredentials(env(tt.env))
			if tt.wantErr {
				var ce *ConfigError
				if !errors.As(err, &ce) || !strings.Contains(err.Error(), EnvS3AccessKey) || strings.Contains(err.Error(), "s3cr3t") {
					t.Fatalf("got %v, want a *ConfigError naming the variables and no value", err)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("got %v, %v; want %v", got, err, tt.want)
			}
		})
	}
}

func TestCredentialsNeverPrintTheirValues(t *testing.T) {
	c := Credentials{S3AccessKey: "AKIAEXAMPLE", S3SecretKey: "wJalrXUtnFEMI"}
	var logged bytes.Buffer
	slog.New(slog.NewJSONHandler(&logged, nil)).Info("start", "credentials", c)
	slog.New(slog.NewTextHandler(&logged, nil)).Info("start", "credentials", c)
	for _, text := range []string{fmt.Sprint(c), fmt.Sprintf("%v %+v %#v %s", c, c, c, c), logged.String()} {
		if strings.Contains(text, "AKIAEXAMPLE") || strings.Contains(text, "wJalrXUtnFEMI") {
			t.Fatalf("a secret leaked: %s", text)
		}
		if !strings.Contains(text, "set") {
			t.Fatalf("%q does not say the credentials are set", text)
		}
	}
	if !c.HasS3() || (Credentials{}).HasS3() {
		t.Fatal("HasS3 is wrong")
	}
}

// Direct reads are presigned object-store URLs: they need an s3:// blob store.
func TestDirectReadsNeedAnS3BlobStore(t *testing.T) {
	c := DefaultConfig()
	c.S3DirectReads = true
	err := c.Validate()
	var ce *ConfigError
	if !errors.As(err, &ce) || ce.Field != "S3DirectReads" || !strings.Contains(err.Error(), "--s3-direct-reads") {
		t.Fatalf("direct reads on the default dir:// store: %v, want a ConfigError naming --s3-direct-reads", err)
	}
	c.Blob, c.S3Endpoint = "s3://bucket", "http://127.0.0.1:9000"
	if err := c.Validate(); err != nil {
		t.Fatalf("direct reads on an s3:// store: %v", err)
	}
}
