//go:build linux

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/cairnstore/cairn/bench"
)

type options struct {
	cairn, minio, goCmd string
	out, markdown       string
	measured            string // directory of sections measured by scripts (renderMeasured)
	duration            time.Duration
	sweepDuration       time.Duration
	keep                bool
}

// The two servers a job can run against.
const (
	nodeDir = "dir" // the embedded default: `cairn serve` with blobs in its data directory
	nodeS3  = "s3"  // `cairn serve --blob s3://...` on the report's MinIO
	// nodeS3Cache is nodeS3 with a segment cache big enough for every file a job reads
	// (--cache-max-bytes): its reads are cache hits (hot).
	nodeS3Cache = "s3-cache"
	// nodeCluster is the leader of the shard of the benchmarks' root among three `cairn
	// serve --cluster` on the report's etcd and MinIO; nodeClusterFollower is another
	// of them (it serves reads from its replica, uploads bodies itself and forwards only
	// the commands).
	nodeCluster         = "cluster"
	nodeClusterFollower = "cluster-follower"
)

// Placeholders of the job arguments, replaced when the job runs and shown as they are in
// BENCHMARKS.md.
const (
	phCairn           = "$CAIRN"                  // the embedded-default node's URL
	phCairnS3         = "$CAIRN_S3"               // the MinIO-backed node's URL
	phCairnS3Cache    = "$CAIRN_S3_CACHE"         // the MinIO-backed node with a segment cache
	phS3Gateway       = "$CAIRN_S3_GATEWAY"       // the MinIO-backed node's S3 gateway (--s3-listen)
	phCluster         = "$CAIRN_CLUSTER"          // the cluster node that leads the shard of the benchmarks' root
	phClusterFollower = "$CAIRN_CLUSTER_FOLLOWER" // a cluster node that does not
	phRelay           = "$RELAY"                  // the relay to the MinIO (cairn bench relay)
	phMinIO           = "$MINIO"                  // the MinIO endpoint
	phEtcd            = "$ETCD"                   // the etcd cluster's client endpoints
	phTmp             = "$TMPDIR"                 // the report's temporary directory (the fsync baseline's parent)
)

// job is one `cairn bench` run.
type job struct {
	id      string   // file stem of its reports in -out
	group   string   // the BENCHMARKS.md section it belongs to
	what    string   // a short description for the summary table
	node    string   // nodeDir or nodeS3
	args    []string // after --server; with placeholders
	report  *bench.Report
	started time.Time
	elapsed time.Duration  // from start to exit of its cairn bench
	profile *profileResult // the server's CPU profile during the job, if it was profiled
	roots   []profileRoot  // the groups of its profile's cumulative breakdown
}

// Summary table groups, in order.
const (
	groupSingle  = "single"
	groupObject  = "object"
	groupCluster = "cluster"
)

// env is what the jobs run against.
type env struct {
	o                 options
	tmp               string
	cairnURL, s3URL   string
	s3GatewayURL      string // the MinIO-backed node's S3 gateway
	s3Key             s3Key  // the credential the S3 gateway phases sign with
	s3CacheURL        string
	relayURL          string
	clusterURLs       []string
	clusterLeader     int // index in clusterURLs of the node leading the root's shard
	clusterFollower   int // index of another node
	minioURL          string
	etcd              []string
	dirServer         profileTarget // the embedded-default node, for its profile
	s3Server          profileTarget // the MinIO-backed node
	started, finished time.Time
	gitCommit         string
	jobs              []*job
	sweep, knee       *job
	kneeRate          float64
	profile           *profileResult
	objectProfiles    []*job     // the profiled object runs (objectProfileJobs)
	rss               *rssResult // the large-body phase (measureRSS)
	commands          []string   // every command run, in order
}

func run(ctx context.Context, o options) error {
	if err := os.MkdirAll(o.out, 0o755); err != nil {
		return err
	}
	tmp, err := os.MkdirTemp("", "cairn-bench-report-")
	if err != nil {
		return err
	}
	if o.keep {
		say("keeping the temporary directory %s", tmp)
	} else {
		defer os.RemoveAll(tmp)
	}
	e := &env{o: o, tmp: tmp, started: time.Now().UTC()}

	say("starting MinIO (%s)", o.minio)
	minio, minioURL, err := startMinIO(ctx, o.minio, tmp)
	if err != nil {
		return err
	}
	defer minio.stop()
	e.minioURL = minioURL

	say("starting a three-member etcd cluster")
	etcd, endpoints, err := startEtcd(ctx, tmp)
	if err != nil {
		return err
	}
	defer etcd.stop()
	e.etcd = endpoints

	say("starting cairn serve (embedded default)")
	dirNode, cairnURL, pprofAddr, err := startCairn(ctx, "cairn-dir", o.cairn, tmp, nil)
	if err != nil {
		return err
	}
	defer dirNode.stop()
	e.cairnURL, e.dirServer = cairnURL, profileTarget{pid: dirNode.pid(), pprofAddr: pprofAddr}

	say("starting cairn serve (blobs on MinIO, with the S3 gateway)")
	if e.s3Key, err = makeS3Key(ctx, o.cairn, dataDir(tmp, "cairn-s3")); err != nil {
		return err
	}
	gatewayAddr, err := freeAddr()
	if err != nil {
		return err
	}
	s3Node, s3URL, s3Pprof, err := startCairn(ctx, "cairn-s3", o.cairn, tmp, minioCreds(),
		"--blob", "s3://cairn-blobs", "--s3-endpoint", minioURL, "--s3-create-bucket", "--s3-listen", gatewayAddr)
	if err != nil {
		return err
	}
	defer s3Node.stop()
	e.s3URL, e.s3Server, e.s3GatewayURL = s3URL, profileTarget{pid: s3Node.pid(), pprofAddr: s3Pprof}, "http://"+gatewayAddr

	say("starting cairn serve (blobs on MinIO, with a segment cache)")
	cacheNode, cacheURL, _, err := startCairn(ctx, "cairn-s3-cache", o.cairn, tmp, minioCreds(),
		"--blob", "s3://cairn-blobs-cached", "--s3-endpoint", minioURL, "--s3-create-bucket", "--cache-max-bytes", strconv.FormatInt(hotCacheBytes, 10))
	if err != nil {
		return err
	}
	defer cacheNode.stop()
	e.s3CacheURL = cacheURL

	say("starting the relay to MinIO (cairn bench relay)")
	relay, relayURL, err := startRelay(ctx, o.cairn, tmp, minioURL)
	if err != nil {
		return err
	}
	defer relay.stop()
	e.relayURL = relayURL

	// The large body first, on a MinIO-backed node that has served nothing yet: its RSS
	// is what one 2 GiB PUT+GET costs, not what earlier phases left in its heap.
	if e.rss, err = e.measureRSS(ctx); err != nil {
		return err
	}

	d := o.duration.String()
	single := func(id, what string, args ...string) *job {
		return &job{id: id, group: groupSingle, what: what, node: nodeDir, args: append(args, "--duration", d)}
	}
	object := func(id, what string, dur time.Duration, args ...string) *job {
		return &job{id: id, group: groupObject, what: what, node: nodeS3, args: append(args, "--duration", dur.String(),
			"--baseline", bench.BaselineMinIO+","+bench.BaselineRelay, "--baseline-minio-endpoint", phMinIO, "--baseline-minio-bucket", "bench-baseline",
			"--baseline-relay-endpoint", phRelay)}
	}
	// viaS3 adds the S3 gateway phase (cairn bench --s3-gateway) to a job on nodeS3.
	viaS3 := func(j *job) *job {
		j.args = append(j.args, "--s3-gateway", phS3Gateway)
		return j
	}
	hot := func(j *job) *job {
		j.id, j.what, j.node = j.id+"-hot", j.what+", cache hits", nodeS3Cache
		return j
	}
	writeBaselines := []string{"--baseline", bench.BaselineFsync + "," + bench.BaselineEtcd, "--baseline-dir", phTmp, "--baseline-etcd-endpoints", phEtcd}
	smallPut64 := single("small-put-c64", "small-put 1 KiB, 64 clients", append([]string{"--scenario", "small-put", "--concurrency", "64"}, writeBaselines...)...)
	e.jobs = []*job{
		smallPut64,
		single("small-put-c8", "small-put 1 KiB, 8 clients", "--scenario", "small-put", "--concurrency", "8", "--baseline", "fsync", "--baseline-dir", phTmp),
		single("small-put-c1", "small-put 1 KiB, 1 client", "--scenario", "small-put", "--concurrency", "1", "--baseline", "fsync", "--baseline-dir", phTmp),
		single("small-get", "small-get 1 KiB, 16 clients", "--scenario", "small-get", "--concurrency", "16"),
		single("stat", "stat (HEAD), 16 clients", "--scenario", "stat", "--concurrency", "16"),
		single("stat-lean", "stat (HEAD), 16 clients, lean HTTP/1.1 generator", "--scenario", "stat", "--concurrency", "16", "--lean-http"),
		single("mixed", "mixed 90% GET / 10% PUT, 16 clients", "--scenario", "mixed", "--concurrency", "16"),
		single("append-log", "append-log 128 B to 4 files, 16 clients", append([]string{"--scenario", "append-log", "--concurrency", "16"}, writeBaselines...)...),
		single("list", "list 100 entries, 8 clients", "--scenario", "list", "--concurrency", "8"),
		single("list-lean", "list 100 entries, 8 clients, lean HTTP/1.1 generator", "--scenario", "list", "--concurrency", "8", "--lean-http"),
		single("snapshot-10", "snapshot of 10 files, 4 clients", "--scenario", "snapshot", "--files", "10", "--concurrency", "4"),
		single("snapshot-10000", "snapshot of 10,000 files, 4 clients", "--scenario", "snapshot", "--files", "10000", "--concurrency", "4"),
		single("restore-100", "restore of 100 files, 4 clients", "--scenario", "restore", "--files", "100", "--concurrency", "4"),
		single("mcp", "MCP tool mix, 8 sessions", "--scenario", "mcp", "--concurrency", "8"),
		single("mcp-lean", "MCP tool mix, 8 sessions, lean HTTP/1.1 generator", "--scenario", "mcp", "--concurrency", "8", "--lean-http"),
		viaS3(object("object-put-1m", "object-put 1 MiB, 4 clients", o.duration, "--scenario", "object-put", "--size", "1MiB", "--concurrency", "4")),
		viaS3(object("object-get-1m", "object-get 1 MiB, 4 clients", o.duration, "--scenario", "object-get", "--size", "1MiB", "--concurrency", "4")),
		viaS3(object("object-put-64m", "object-put 64 MiB, 2 clients", 2*o.duration, "--scenario", "object-put", "--size", "64MiB", "--concurrency", "2")),
		viaS3(object("object-get-64m", "object-get 64 MiB, 2 clients", 2*o.duration, "--scenario", "object-get", "--size", "64MiB", "--concurrency", "2")),
		object("object-put-1m-c16", "object-put 1 MiB, 16 clients", o.duration, "--scenario", "object-put", "--size", "1MiB", "--concurrency", "16"),
		object("object-put-64m-c4", "object-put 64 MiB, 4 clients", 2*o.duration, "--scenario", "object-put", "--size", "64MiB", "--concurrency", "4"),
		object("object-put-64m-c16", "object-put 64 MiB, 16 clients", 2*o.duration, "--scenario", "object-put", "--size", "64MiB", "--concurrency", "16"),
		hot(object("object-get-1m", "object-get 1 MiB, 4 clients", o.duration, "--scenario", "object-get", "--size", "1MiB", "--concurrency", "4")),
		hot(object("object-get-64m", "object-get 64 MiB, 2 clients", 2*o.duration, "--scenario", "object-get", "--size", "64MiB", "--concurrency", "2")),
	}
	for _, j := range e.jobs {
		if err := e.runJob(ctx, j); err != nil {
			return err
		}
		if j == smallPut64 {
			// The sweep spans the closed loop's throughput, whatever the machine.
			e.sweep = single("small-put-sweep", "small-put 1 KiB, open loop", "--scenario", "small-put", "--sweep", joinRates(sweepRates(j.report.Cairn.AchievedRate)),
				"--max-in-flight", "256", "--drain-timeout", "5s", "--baseline", "fsync", "--baseline-dir", phTmp)
			e.sweep.args = slicesReplace(e.sweep.args, "--duration", o.sweepDuration.String())
		}
	}
	if err := e.runJob(ctx, e.sweep); err != nil {
		return err
	}
	e.kneeRate = knee(e.sweep.report.Sweep)
	e.knee = single("small-put-knee", "small-put 1 KiB, open loop at the knee", "--scenario", "small-put",
		"--rate", strconv.FormatFloat(e.kneeRate, 'f', 0, 64), "--max-in-flight", "256", "--drain-timeout", "5s")
	e.knee.args = slicesReplace(e.knee.args, "--duration", (profileWarmup + profileSeconds*time.Second + profileTail).String())
	if e.profile, err = e.profileJob(ctx, e.knee, e.dirServer, profileWarmup, pprofTopNodes); err != nil {
		return err
	}
	if err := e.profileObjects(ctx); err != nil {
		return err
	}

	// The cluster last, with the single nodes idle, so that its heartbeats stay out of the
	// single-node phases and the profile.
	say("starting a %d-node cluster (cairn serve --cluster, replication %d, on the etcd and the MinIO)", clusterNodes, clusterReplication)
	nodes, urls, err := startCluster(ctx, o.cairn, tmp, e.etcd, e.minioURL)
	if err != nil {
		return err
	}
	defer func() {
		for i := len(nodes) - 1; i >= 0; i-- {
			nodes[i].stop()
		}
	}()
	e.clusterURLs = urls
	if e.clusterLeader, err = shardLeader(ctx, urls); err != nil {
		return err
	}
	e.clusterFollower = (e.clusterLeader + 1) % len(urls)
	cluster := func(j *job) *job {
		j.id, j.group, j.node = "cluster-"+j.id, groupCluster, nodeCluster
		return j
	}
	follower := func(j *job) *job {
		j = cluster(j)
		j.id, j.what, j.node = j.id+"-follower", j.what+", through a follower", nodeClusterFollower
		return j
	}
	for _, j := range []*job{
		cluster(single("small-put-c64", "small-put 1 KiB, 64 clients", append([]string{"--scenario", "small-put", "--concurrency", "64"}, writeBaselines...)...)),
		cluster(single("stat", "stat (HEAD), 16 clients", "--scenario", "stat", "--concurrency", "16")),
		cluster(object("object-put-1m", "object-put 1 MiB, 4 clients", o.duration, "--scenario", "object-put", "--size", "1MiB", "--concurrency", "4")),
		follower(object("object-put-1m", "object-put 1 MiB, 4 clients", o.duration, "--scenario", "object-put", "--size", "1MiB", "--concurrency", "4")),
		// Each read through a follower right after the same through the leader: the
		// targets table compares the two, so they see the same machine load.
		cluster(single("small-get", "small-get 1 KiB, 16 clients", "--scenario", "small-get", "--concurrency", "16")),
		follower(single("small-get", "small-get 1 KiB, 16 clients", "--scenario", "small-get", "--concurrency", "16")),
		cluster(object("object-get-1m", "object-get 1 MiB, 4 clients", o.duration, "--scenario", "object-get", "--size", "1MiB", "--concurrency", "4")),
		follower(object("object-get-1m", "object-get 1 MiB, 4 clients", o.duration, "--scenario", "object-get", "--size", "1MiB", "--concurrency", "4")),
	} {
		e.jobs = append(e.jobs, j)
		if err := e.runJob(ctx, j); err != nil {
			return err
		}
	}
	e.finished = time.Now().UTC()
	md, err := e.render()
	if err != nil {
		return err
	}
	if err := os.WriteFile(o.markdown, []byte(md), 0o644); err != nil {
		return err
	}
	say("wrote %s and %s/ in %v", o.markdown, o.out, time.Since(e.started).Round(time.Second))
	return nil
}

// minioCreds is the environment that gives cairn serve and cairn bench the MinIO's
// credentials.
func minioCreds() []string {
	return []string{"AWS_ACCESS_KEY_ID=" + minioUser, "AWS_SECRET_ACCESS_KEY=" + minioPassword}
}

// command returns the argv of j, placeholders replaced, with its report files in -out.
func (e *env) command(j *job) []string {
	server, backend, nodes := e.cairnURL, "dir", "1"
	switch j.node {
	case nodeS3:
		server, backend = e.s3URL, "s3"
	case nodeS3Cache:
		server, backend = e.s3CacheURL, "s3"
	case nodeCluster:
		server, backend, nodes = e.clusterURLs[e.clusterLeader], "s3", strconv.Itoa(clusterNodes)
	case nodeClusterFollower:
		server, backend, nodes = e.clusterURLs[e.clusterFollower], "s3", strconv.Itoa(clusterNodes)
	}
	args := []string{"bench", "--server", server}
	for _, a := range j.args {
		a = strings.ReplaceAll(a, phMinIO, e.minioURL)
		a = strings.ReplaceAll(a, phRelay, e.relayURL)
		a = strings.ReplaceAll(a, phS3Gateway, e.s3GatewayURL)
		a = strings.ReplaceAll(a, phEtcd, strings.Join(e.etcd, ","))
		a = strings.ReplaceAll(a, phTmp, e.tmp)
		args = append(args, a)
	}
	base := filepath.Join(e.o.out, j.id)
	return append(args, "--backend", backend, "--nodes", nodes, "--out", base+".json", "--markdown", base+".md", "--plot", base+".png")
}

// shownCommand is j's command line as BENCHMARKS.md shows it: placeholders kept.
func (e *env) shownCommand(j *job) string {
	server, backend, nodes := phCairn, "dir", 1
	switch j.node {
	case nodeS3:
		server, backend = phCairnS3, "s3"
	case nodeS3Cache:
		server, backend = phCairnS3Cache, "s3"
	case nodeCluster:
		server, backend, nodes = phCluster, "s3", clusterNodes
	case nodeClusterFollower:
		server, backend, nodes = phClusterFollower, "s3", clusterNodes
	}
	base := filepath.Join(e.o.out, j.id)
	return fmt.Sprintf("cairn bench --server %s %s --backend %s --nodes %d --out %s.json --markdown %s.md --plot %s.png",
		server, strings.Join(j.args, " "), backend, nodes, base, base, base)
}

// runJob runs j's `cairn bench` to completion and reads its JSON report.
func (e *env) runJob(ctx context.Context, j *job) error {
	cmd, err := e.startJob(ctx, j)
	if err != nil {
		return err
	}
	return e.finishJob(j, cmd)
}

func (e *env) startJob(ctx context.Context, j *job) (*exec.Cmd, error) {
	argv := e.command(j)
	say("%s", e.shownCommand(j))
	e.commands = append(e.commands, e.shownCommand(j))
	cmd := exec.CommandContext(ctx, e.o.cairn, argv...)
	cmd.Env = append(append(os.Environ(), minioCreds()...),
		"CAIRN_BENCH_S3_ACCESS_KEY_ID="+e.s3Key.AccessKeyID, "CAIRN_BENCH_S3_SECRET_ACCESS_KEY="+e.s3Key.SecretAccessKey)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	cmd.WaitDelay = stopTimeout
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("%s: %w", j.id, err)
	}
	j.started = time.Now()
	return cmd, nil
}

func (e *env) finishJob(j *job, cmd *exec.Cmd) error {
	err := cmd.Wait()
	j.elapsed = time.Since(j.started)
	if err != nil {
		return fmt.Errorf("%s: cairn bench: %w", j.id, err)
	}
	b, err := os.ReadFile(filepath.Join(e.o.out, j.id+".json"))
	if err != nil {
		return err
	}
	var rep bench.Report
	if err := json.Unmarshal(b, &rep); err != nil {
		return fmt.Errorf("%s: report: %w", j.id, err)
	}
	if rep.Schema != bench.ReportSchema {
		return fmt.Errorf("%s: report schema %d, want %d", j.id, rep.Schema, bench.ReportSchema)
	}
	if rep.Cairn == nil && len(rep.Sweep) == 0 {
		return fmt.Errorf("%s: report has no Cairn phase", j.id)
	}
	j.report = &rep
	if e.gitCommit == "" {
		e.gitCommit = rep.Environment.GitCommit
	}
	return nil
}

// sweepFractions are the sweep's rates as fractions of the closed loop's throughput:
// denser below it, where an open loop's knee usually is (a closed loop of 64 clients
// batches better than arrivals on a schedule do).
var sweepFractions = []float64{0.15, 0.3, 0.45, 0.6, 0.8, 1, 1.25}

// sweepRates are the open-loop rates of the sweep for a closed-loop throughput of closed
// operations per second, rounded to two significant digits, at least 10/s.
func sweepRates(closed float64) []float64 {
	var rates []float64
	for _, f := range sweepFractions {
		r := closed * f
		if r < 10 {
			r = 10
		}
		mag := math.Pow(10, math.Floor(math.Log10(r))-1)
		rates = append(rates, math.Round(r/mag)*mag)
	}
	return rates
}

// Knee rule: the highest offered rate up to which, at every rate of the sweep, Cairn
// completed at least kneeAchieved of the offered rate, sent every operation, and kept its
// median latency within kneeP50 times the lowest rate's. The median, not p99: on a shared
// machine a single stall of a few hundred milliseconds moves a short phase's p99 but not
// its median, while a server past its knee moves both.
const (
	kneeAchieved = 0.95
	kneeP50      = 4
)

// knee returns the knee of a sweep (see kneeAchieved), or the lowest rate when even
// that one is past it.
func knee(sweep []*bench.Phase) float64 {
	if len(sweep) == 0 {
		return 0
	}
	base := float64(sweep[0].Latency.P50Micros)
	k := sweep[0].OfferedRate
	for _, ph := range sweep {
		if ph.AchievedRate < kneeAchieved*ph.OfferedRate || ph.ErrorClasses[bench.ClassNotSent] > 0 ||
			float64(ph.Latency.P50Micros) > kneeP50*base {
			break
		}
		k = ph.OfferedRate
	}
	return k
}

func joinRates(rs []float64) string {
	s := make([]string, len(rs))
	for i, r := range rs {
		s[i] = strconv.FormatFloat(r, 'f', -1, 64)
	}
	return strings.Join(s, ",")
}

// slicesReplace returns args with the value after flag set to v.
func slicesReplace(args []string, flag, v string) []string {
	out := append([]string(nil), args...)
	for i := range len(out) - 1 {
		if out[i] == flag {
			out[i+1] = v
		}
	}
	return out
}

func say(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "bench-report: "+format+"\n", args...)
}
