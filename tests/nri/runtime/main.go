// nri-runtime: plays the container runtime's side of NRI for gpusched's tests, with NRI's
// own adaptation package (github.com/containerd/nri/pkg/adaptation), the code containerd
// and CRI-O embed. It listens on a socket, lets NRI plugins register, and obeys one JSON
// command per line on stdin, answering one JSON line per command on stdout:
//
//	{"op":"wait","timeout_ms":10000,"after":0} wait until more than `after` plugin
//	                                          synchronizations happened (answer: "synced")
//	{"op":"create","pod":{...},"container":{...}}
//	    pod: id, name, namespace, uid, annotations; container: id, name, env, annotations.
//	    Answer: {"ok":true,"env":{...},"devices":[...],"mounts":[...]} (the adjustment),
//	    or {"ok":false,"error":"..."} (the container's creation fails).
//	{"op":"stop","pod":{...}}                 the pod's sandbox stops (StopPodSandbox)
//	{"op":"containers","pods":[...],"containers":[...]} the state the next plugin is synced with
//	{"op":"quit"}                             stop and exit: the plugins' connections end, as
//	                                          when the runtime goes away (a test restarts the
//	                                          runtime by starting this program again)
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/containerd/nri/pkg/adaptation"
	"github.com/containerd/nri/pkg/api"
)

type podSpec struct {
	ID          string            `json:"id"`
	Name        string            `json:"name"`
	Namespace   string            `json:"namespace"`
	UID         string            `json:"uid"`
	Annotations map[string]string `json:"annotations"`
}

type ctrSpec struct {
	ID          string            `json:"id"`
	PodID       string            `json:"pod_id"`
	Name        string            `json:"name"`
	Env         []string          `json:"env"`
	Annotations map[string]string `json:"annotations"`
}

type command struct {
	Op         string    `json:"op"`
	TimeoutMs  int       `json:"timeout_ms"`
	After      int       `json:"after"`
	Pod        podSpec   `json:"pod"`
	Container  ctrSpec   `json:"container"`
	Pods       []podSpec `json:"pods"`
	Containers []ctrSpec `json:"containers"`
}

type device struct {
	Path  string `json:"path"`
	Type  string `json:"type"`
	Major int64  `json:"major"`
	Minor int64  `json:"minor"`
	Mode  uint32 `json:"mode"`
}

type mount struct {
	Source      string   `json:"source"`
	Destination string   `json:"destination"`
	Type        string   `json:"type"`
	Options     []string `json:"options"`
}

type answer struct {
	OK      bool              `json:"ok"`
	Error   string            `json:"error,omitempty"`
	Env     map[string]string `json:"env,omitempty"`
	Devices []device          `json:"devices,omitempty"`
	Mounts  []mount           `json:"mounts,omitempty"`
	Synced  int               `json:"synced,omitempty"`
}

type runtime struct {
	mu      sync.Mutex
	synced  int
	booting bool // Start() synchronizes the plugins it launched itself (none): not counted
	pods    []*api.PodSandbox
	ctrs    []*api.Container
	socket  string
	adapter *adaptation.Adaptation
}

func toPod(p podSpec) *api.PodSandbox {
	return &api.PodSandbox{Id: p.ID, Name: p.Name, Namespace: p.Namespace, Uid: p.UID, Annotations: p.Annotations}
}

func toCtr(c ctrSpec) *api.Container {
	return &api.Container{Id: c.ID, PodSandboxId: c.PodID, Name: c.Name, Env: c.Env, Annotations: c.Annotations,
		State: api.ContainerState_CONTAINER_RUNNING}
}

func (r *runtime) start() error {
	syncFn := func(ctx context.Context, cb adaptation.SyncCB) error {
		r.mu.Lock()
		pods, ctrs := r.pods, r.ctrs
		r.mu.Unlock()
		if _, err := cb(ctx, pods, ctrs); err != nil {
			return err
		}
		r.mu.Lock()
		if !r.booting {
			r.synced++
		}
		r.mu.Unlock()
		return nil
	}
	update := func(ctx context.Context, u []*adaptation.ContainerUpdate) ([]*adaptation.ContainerUpdate, error) {
		return nil, nil
	}
	empty, err := os.MkdirTemp("", "nri-runtime-plugins")
	if err != nil {
		return err
	}
	a, err := adaptation.New("gpusched-test-runtime", "v0.0.1", syncFn, update,
		adaptation.WithSocketPath(r.socket), adaptation.WithPluginPath(empty), adaptation.WithPluginConfigPath(empty))
	if err != nil {
		return err
	}
	r.mu.Lock()
	r.booting = true
	r.mu.Unlock()
	err = a.Start()
	r.mu.Lock()
	r.booting = false
	r.mu.Unlock()
	if err != nil {
		return err
	}
	r.adapter = a
	return nil
}

func main() {
	socket := flag.String("socket", "", "NRI socket to listen on")
	flag.Parse()
	if *socket == "" {
		fmt.Fprintln(os.Stderr, "nri-runtime: -socket is required")
		os.Exit(2)
	}
	r := &runtime{socket: *socket}
	if err := r.start(); err != nil {
		fmt.Fprintln(os.Stderr, "nri-runtime:", err)
		os.Exit(1)
	}
	out := json.NewEncoder(os.Stdout)
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 1<<20), 1<<22)
	fmt.Println(`{"ok":true,"ready":true}`)
	for in.Scan() {
		var c command
		if err := json.Unmarshal(in.Bytes(), &c); err != nil {
			out.Encode(answer{Error: "bad command: " + err.Error()})
			continue
		}
		switch c.Op {
		case "wait":
			t := time.Duration(c.TimeoutMs) * time.Millisecond
			if t == 0 {
				t = 10 * time.Second
			}
			deadline := time.Now().Add(t)
			for {
				r.mu.Lock()
				n := r.synced
				r.mu.Unlock()
				if n > c.After {
					// the plugin joins the runtime's list once its sync is over:
					// wait for that as containerd's CRI calls do
					r.adapter.BlockPluginSync().Unblock()
					out.Encode(answer{OK: true, Synced: n})
					break
				}
				if time.Now().After(deadline) {
					out.Encode(answer{Error: "no plugin synchronized in time", Synced: n})
					break
				}
				time.Sleep(20 * time.Millisecond)
			}
		case "containers":
			r.mu.Lock()
			r.pods, r.ctrs = nil, nil
			for _, p := range c.Pods {
				r.pods = append(r.pods, toPod(p))
			}
			for _, x := range c.Containers {
				r.ctrs = append(r.ctrs, toCtr(x))
			}
			r.mu.Unlock()
			out.Encode(answer{OK: true})
		case "create":
			req := &adaptation.CreateContainerRequest{Pod: toPod(c.Pod), Container: toCtr(c.Container)}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			block := r.adapter.BlockPluginSync() // as containerd around a CRI call
			rsp, err := r.adapter.CreateContainer(ctx, req)
			block.Unblock()
			cancel()
			if err != nil {
				out.Encode(answer{Error: err.Error()})
				continue
			}
			a := answer{OK: true, Env: map[string]string{}}
			if adj := rsp.GetAdjust(); adj != nil {
				for _, e := range adj.Env {
					a.Env[e.Key] = e.Value
				}
				if adj.Linux != nil {
					for _, d := range adj.Linux.Devices {
						var mode uint32
						if d.FileMode != nil {
							mode = d.FileMode.Value
						}
						a.Devices = append(a.Devices, device{d.Path, d.Type, d.Major, d.Minor, mode})
					}
				}
				for _, m := range adj.Mounts {
					a.Mounts = append(a.Mounts, mount{m.Source, m.Destination, m.Type, m.Options})
				}
			}
			out.Encode(a)
		case "stop":
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			block := r.adapter.BlockPluginSync()
			err := r.adapter.StopPodSandbox(ctx, &adaptation.StopPodSandboxRequest{Pod: toPod(c.Pod)})
			block.Unblock()
			cancel()
			if err != nil {
				out.Encode(answer{Error: err.Error()})
			} else {
				out.Encode(answer{OK: true})
			}
		case "quit":
			r.adapter.Stop()
			out.Encode(answer{OK: true})
			return
		default:
			out.Encode(answer{Error: "unknown op " + c.Op})
		}
	}
	r.adapter.Stop()
}
