package deploy

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"maps"
	"os"
	"path"
	"path/filepath"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	k8syaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// kinds are the types the manifests may hold, by apiVersion and kind.
var kinds = map[string]func() any{
	"v1/Namespace":                  func() any { return &corev1.Namespace{} },
	"v1/ConfigMap":                  func() any { return &corev1.ConfigMap{} },
	"v1/Secret":                     func() any { return &corev1.Secret{} },
	"v1/Service":                    func() any { return &corev1.Service{} },
	"apps/v1/StatefulSet":           func() any { return &appsv1.StatefulSet{} },
	"policy/v1/PodDisruptionBudget": func() any { return &policyv1.PodDisruptionBudget{} },
}

// decodeManifests decodes every document of r strictly into its kind's type.
func decodeManifests(r io.Reader) ([]any, error) {
	var out []any
	docs := k8syaml.NewYAMLReader(bufio.NewReader(r))
	for {
		doc, err := docs.Read()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		if len(bytes.TrimSpace(stripComments(doc))) == 0 {
			continue
		}
		var tm metav1.TypeMeta
		if err := yaml.Unmarshal(doc, &tm); err != nil {
			return nil, err
		}
		newObj, ok := kinds[tm.APIVersion+"/"+tm.Kind]
		if !ok {
			return nil, errors.New("unexpected kind " + tm.APIVersion + "/" + tm.Kind)
		}
		obj := newObj()
		if err := yaml.UnmarshalStrict(doc, obj); err != nil {
			return nil, errors.New(tm.Kind + ": " + err.Error())
		}
		out = append(out, obj)
	}
}

func stripComments(doc []byte) []byte {
	var b bytes.Buffer
	for _, line := range strings.Split(string(doc), "\n") {
		if !strings.HasPrefix(strings.TrimSpace(line), "#") {
			b.WriteString(line + "\n")
		}
	}
	return b.Bytes()
}

// manifests are the decoded objects of kubernetes/*.yaml.
type manifests struct {
	sts        *appsv1.StatefulSet
	services   map[string]*corev1.Service
	configMaps map[string]*corev1.ConfigMap
	secrets    map[string]*corev1.Secret
	pdb        *policyv1.PodDisruptionBudget
}

func loadManifests(t *testing.T) manifests {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("kubernetes", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no manifests: %v", err)
	}
	m := manifests{services: map[string]*corev1.Service{}, configMaps: map[string]*corev1.ConfigMap{}, secrets: map[string]*corev1.Secret{}}
	for _, file := range files {
		f, err := os.Open(file)
		if err != nil {
			t.Fatal(err)
		}
		objs, err := decodeManifests(f)
		f.Close()
		if err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		for _, o := range objs {
			switch o := o.(type) {
			case *appsv1.StatefulSet:
				m.sts = o
			case *corev1.Service:
				m.services[o.Name] = o
			case *corev1.ConfigMap:
				m.configMaps[o.Name] = o
			case *corev1.Secret:
				m.secrets[o.Name] = o
			case *policyv1.PodDisruptionBudget:
				m.pdb = o
			}
		}
	}
	if m.sts == nil || m.pdb == nil {
		t.Fatal("the manifests hold no StatefulSet or no PodDisruptionBudget")
	}
	return m
}

func TestManifestsDecodeStrictly(t *testing.T) {
	loadManifests(t)
	// And strict decoding does fail on a field no type has.
	bad := "apiVersion: apps/v1\nkind: StatefulSet\nmetadata:\n  name: x\nspec:\n  replica: 3\n"
	if _, err := decodeManifests(strings.NewReader(bad)); err == nil {
		t.Fatal("a misspelt field decoded")
	}
}

func TestStatefulSetGivesEachNodeAStableIdentity(t *testing.T) {
	m := loadManifests(t)
	sts := m.sts
	pods := labels.Set(sts.Spec.Template.Labels)
	sel, err := metav1.LabelSelectorAsSelector(sts.Spec.Selector)
	if err != nil || !sel.Matches(pods) {
		t.Fatalf("the StatefulSet's selector %v does not select its pods %v (%v)", sts.Spec.Selector, pods, err)
	}
	if sts.Spec.Replicas == nil || *sts.Spec.Replicas != 3 {
		t.Errorf("replicas %v, want 3", sts.Spec.Replicas)
	}
	peer, ok := m.services[sts.Spec.ServiceName]
	if !ok || peer.Spec.ClusterIP != corev1.ClusterIPNone || !peer.Spec.PublishNotReadyAddresses {
		t.Errorf("serviceName %q: want a headless Service that lists pods before they are ready", sts.Spec.ServiceName)
	}
	client, ok := m.services["cairn"]
	if !ok || client.Spec.ClusterIP == corev1.ClusterIPNone || !labels.SelectorFromSet(client.Spec.Selector).Matches(pods) {
		t.Error("no client Service selecting the pods")
	}
	pdbSel, err := metav1.LabelSelectorAsSelector(m.pdb.Spec.Selector)
	if err != nil || !pdbSel.Matches(pods) || m.pdb.Spec.MaxUnavailable == nil || m.pdb.Spec.MaxUnavailable.IntValue() != 1 {
		t.Errorf("the PodDisruptionBudget must select the pods and allow one down at a time (%v)", err)
	}
	if len(sts.Spec.VolumeClaimTemplates) != 1 {
		t.Fatalf("%d volume claim templates, want 1 (the data directory)", len(sts.Spec.VolumeClaimTemplates))
	}

	spec := sts.Spec.Template.Spec
	if len(spec.Containers) != 1 {
		t.Fatalf("%d containers, want 1", len(spec.Containers))
	}
	c := spec.Containers[0]
	ports := map[string]int32{}
	for _, p := range c.Ports {
		ports[p.Name] = p.ContainerPort
	}
	for _, p := range []struct {
		name  string
		probe *corev1.Probe
		path  string
	}{{"liveness", c.LivenessProbe, "/healthz"}, {"readiness", c.ReadinessProbe, "/readyz"}, {"startup", c.StartupProbe, "/healthz"}} {
		if p.probe == nil || p.probe.HTTPGet == nil {
			t.Errorf("no HTTP %s probe", p.name)
			continue
		}
		g := p.probe.HTTPGet
		host := ""
		for _, h := range g.HTTPHeaders {
			if strings.EqualFold(h.Name, "Host") {
				host = h.Value
			}
		}
		if g.Path != p.path || g.Scheme != corev1.URISchemeHTTPS || ports[g.Port.String()] != 7070 || host != "localhost" {
			t.Errorf("%s probe: %s %s on port %s with Host %q; want HTTPS %s on the client port with Host localhost (the node refuses the pod IP)",
				p.name, g.Scheme, g.Path, g.Port.String(), host, p.path)
		}
	}
	sc := c.SecurityContext
	if sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
		t.Error("the container must run with a read-only root and no privilege escalation")
	}
	if psc := spec.SecurityContext; psc == nil || psc.RunAsNonRoot == nil || !*psc.RunAsNonRoot {
		t.Error("the pod must run as non-root")
	}

	// The environment of pod cairn-1, as the kubelet builds it, starts a node.
	env := podEnv(t, m, c, "cairn-1")
	cfg := loadNodeConfig(t, "pod cairn-1", env)
	if !cfg.Cluster || cfg.NodeID != "cairn-1" || cfg.AdvertisePeer != "cairn-1."+peer.Name+".cairn.svc:7080" || !cfg.TLS() || !cfg.PeerTLS() {
		t.Errorf("pod cairn-1: cluster %v, node id %q, advertised peer %q, TLS %v, peer TLS %v", cfg.Cluster, cfg.NodeID, cfg.AdvertisePeer, cfg.TLS(), cfg.PeerTLS())
	}
	if cfg.Etcd == "" || cfg.S3Endpoint == "" || !strings.HasPrefix(cfg.Blob, "s3://") {
		t.Error("etcd and the object store must be configured")
	}
	if _, port, _ := strings.Cut(cfg.PeerListen, ":"); ports["peer"] != 7080 || port != "7080" {
		t.Errorf("peer listener %q, container peer port %d", cfg.PeerListen, ports["peer"])
	}
	if !mountsPath(c.VolumeMounts, sts.Spec.VolumeClaimTemplates[0].Name, cfg.DataDir) {
		t.Errorf("the data directory %s is not on the volume claim", cfg.DataDir)
	}
	// Every TLS file is a key of a Secret mounted at its directory.
	volumes := map[string]*corev1.Volume{}
	for i := range spec.Volumes {
		volumes[spec.Volumes[i].Name] = &spec.Volumes[i]
	}
	for setting, file := range tlsFiles(cfg) {
		found := false
		for _, vm := range c.VolumeMounts {
			v := volumes[vm.Name]
			if vm.MountPath != path.Dir(file) || v == nil || v.Secret == nil {
				continue
			}
			if s, ok := m.secrets[v.Secret.SecretName]; ok {
				_, has := s.StringData[path.Base(file)]
				found = found || has
			}
		}
		if !found {
			t.Errorf("%s %s is no key of a Secret mounted at %s", setting, file, path.Dir(file))
		}
	}
}

// podEnv returns the environment the kubelet gives container c of pod: envFrom
// (ConfigMaps and Secrets of the manifests), then env with $(VAR) expanded.
func podEnv(t *testing.T, m manifests, c corev1.Container, pod string) map[string]string {
	t.Helper()
	env := map[string]string{}
	for _, from := range c.EnvFrom {
		switch {
		case from.ConfigMapRef != nil:
			maps.Copy(env, envSource(t, m.configMaps, "ConfigMap", from.ConfigMapRef.Name).Data)
		case from.SecretRef != nil:
			maps.Copy(env, envSource(t, m.secrets, "Secret", from.SecretRef.Name).StringData)
		}
	}
	for _, e := range c.Env {
		v := e.Value
		if e.ValueFrom != nil && e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "metadata.name" {
			v = pod
		}
		env[e.Name] = os.Expand(strings.NewReplacer("$(", "${", ")", "}").Replace(v), func(k string) string { return env[k] })
	}
	return env
}

// envSource returns the object (a ConfigMap or Secret) named by an envFrom, failing t when
// no manifest holds it.
func envSource[T any](t *testing.T, objects map[string]*T, kind, name string) *T {
	t.Helper()
	o, ok := objects[name]
	if !ok {
		t.Fatalf("envFrom names %s %q, which no manifest holds", kind, name)
	}
	return o
}

// mountsPath reports whether volume is mounted at dir.
func mountsPath(mounts []corev1.VolumeMount, volume, dir string) bool {
	for _, vm := range mounts {
		if vm.Name == volume && vm.MountPath == dir {
			return true
		}
	}
	return false
}
