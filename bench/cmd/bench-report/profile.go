//go:build linux

package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"
)

// The knee phase: the open loop runs profileWarmup, then the server is profiled for
// profileSeconds, then the load runs profileTail more.
const (
	profileWarmup  = 2 * time.Second
	profileSeconds = 8
	profileTail    = time.Second
	// pprofTopNodes is how many functions of the profile BENCHMARKS.md shows.
	pprofTopNodes = 25
	// clockTicks is Linux's USER_HZ, the unit of /proc's CPU times.
	clockTicks = 100
)

// profileResult is what a profiled phase (profileJob) measured besides latency: where the
// server's CPU went, and how busy the machine was.
type profileResult struct {
	// warmup is how long the job ran before the profile began; window how long the
	// profile and the accounting lasted.
	warmup, window time.Duration
	// machineBusy and machineIOWait are fractions of all cores' time in the profile's
	// window: running anything, and idle while waiting for the disk.
	machineBusy, machineIOWait float64
	// serverCores, generatorCores and otherCores are the CPU time per second of the
	// window (1 = one core) of the server, of the load generator (`cairn bench`), and of
	// everything else on the machine.
	serverCores, generatorCores, otherCores float64
	cores                                   int
	// top and topCum are `go tool pprof -top` of the server's CPU profile, by flat and by
	// cumulative time.
	top, topCum string
	profilePath string
	command     string
}

// cpuSample is a reading of the machine's and two processes' CPU time counters.
type cpuSample struct {
	at                  time.Time
	total, idle, iowait uint64 // machine, clock ticks, all cores
	server, generator   uint64 // the processes, user + system ticks
	err                 error
}

func sampleCPU(server, generator int) cpuSample {
	s := cpuSample{at: time.Now()}
	var err1, err2, err3 error
	s.total, s.idle, s.iowait, err1 = machineCPU()
	s.server, err2 = procCPU(server)
	s.generator, err3 = procCPU(generator)
	s.err = errors.Join(err1, err2, err3)
	return s
}

// machineCPU reads the first line of /proc/stat: user nice system idle iowait irq
// softirq steal (ticks).
func machineCPU() (total, idle, iowait uint64, err error) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, 0, 0, err
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	if len(f) < 9 || f[0] != "cpu" {
		return 0, 0, 0, fmt.Errorf("/proc/stat: unexpected first line %q", line)
	}
	for i := 1; i <= 8; i++ {
		v, err := strconv.ParseUint(f[i], 10, 64)
		if err != nil {
			return 0, 0, 0, fmt.Errorf("/proc/stat: %w", err)
		}
		total += v
		switch i {
		case 4:
			idle = v
		case 5:
			iowait = v
		}
	}
	return total, idle, iowait, nil
}

// procCPU reads utime + stime of pid from /proc/PID/stat (ticks).
func procCPU(pid int) (uint64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, fmt.Errorf("/proc/%d/stat: no command name", pid)
	}
	f := strings.Fields(s[i+1:]) // f[0] is field 3 (state); utime is field 14, stime 15
	if len(f) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: too few fields", pid)
	}
	u, err1 := strconv.ParseUint(f[11], 10, 64)
	st, err2 := strconv.ParseUint(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("/proc/%d/stat: bad utime/stime %q %q", pid, f[11], f[12])
	}
	return u + st, nil
}

// profileTarget is a server the report profiles: its process (for the CPU accounting)
// and its loopback pprof endpoint (CAIRN_PPROF_LISTEN; the binary built with -tags pprof).
type profileTarget struct {
	pid       int
	pprofAddr string
}

// profileJob runs j against srv, takes srv's CPU profile for profileSeconds from warmup
// after j's start, saves it as <j.id>.cpu.pprof in -out, and accounts the CPU of the
// machine, the server and the load generator over the profile's window. Its top is the
// pprofTopNodes functions by flat time, its topCum the cumNodes ones by cumulative time.
func (e *env) profileJob(ctx context.Context, j *job, srv profileTarget, warmup time.Duration, cumNodes int) (*profileResult, error) {
	res := &profileResult{warmup: warmup, cores: runtime.NumCPU(), command: e.shownCommand(j),
		profilePath: filepath.Join(e.o.out, j.id+".cpu.pprof")}
	cmd, err := e.startJob(ctx, j)
	if err != nil {
		return nil, err
	}
	select {
	case <-time.After(warmup):
	case <-ctx.Done():
	}
	a := sampleCPU(srv.pid, cmd.Process.Pid)
	perr := fetchProfile(ctx, "http://"+srv.pprofAddr+"/debug/pprof/profile?seconds="+strconv.Itoa(profileSeconds), res.profilePath)
	b := sampleCPU(srv.pid, cmd.Process.Pid)
	if err := e.finishJob(j, cmd); err != nil {
		return nil, err
	}
	if perr != nil {
		return nil, fmt.Errorf("%s: server CPU profile (is the cairn binary built with -tags pprof?): %w", j.id, perr)
	}
	if err := errors.Join(a.err, b.err); err != nil {
		return nil, fmt.Errorf("%s: CPU accounting: %w", j.id, err)
	}
	res.window = b.at.Sub(a.at)
	if dt := float64(b.total - a.total); dt > 0 {
		res.machineIOWait = float64(b.iowait-a.iowait) / dt
		res.machineBusy = 1 - float64(b.idle-a.idle)/dt - res.machineIOWait
	}
	secs := res.window.Seconds()
	res.serverCores = float64(b.server-a.server) / clockTicks / secs
	res.generatorCores = float64(b.generator-a.generator) / clockTicks / secs
	res.otherCores = math.Max(0, res.machineBusy*float64(res.cores)-res.serverCores-res.generatorCores)
	for _, top := range []struct {
		out   *string
		nodes int
		args  []string
	}{{&res.top, pprofTopNodes, nil}, {&res.topCum, cumNodes, []string{"-cum"}}} {
		args := append([]string{"tool", "pprof", "-top", "-nodecount=" + strconv.Itoa(top.nodes)}, top.args...)
		out, err := exec.CommandContext(ctx, e.o.goCmd, append(args, e.o.cairn, res.profilePath)...).CombinedOutput()
		if err != nil {
			return nil, fmt.Errorf("go tool pprof: %w\n%s", err, out)
		}
		*top.out = strings.TrimSpace(string(out))
	}
	return res, nil
}

// fetchProfile saves the body of url (a pprof profile) to path.
func fetchProfile(ctx context.Context, url, path string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	_, err = io.Copy(f, resp.Body)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
