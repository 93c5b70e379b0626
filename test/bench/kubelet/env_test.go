package kubelet

import (
	"context"
	"reflect"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/ptr"
)

func envTestPod() *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: "ns", Name: "m1", UID: "uid-1",
			Labels:      map[string]string{"app": "etcd", "member": "m1"},
			Annotations: map[string]string{"note": "a\"b"},
		},
		Spec: v1.PodSpec{NodeName: "node-a", ServiceAccountName: "etcd"},
	}
}

func TestContainerEnv(t *testing.T) {
	cs := fake.NewClientset(
		&v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "cfg"}, Data: map[string]string{"A": "from-cm", "B": "b", "BAD=KEY": "x"}},
		&v1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "sec"}, Data: map[string][]byte{"password": []byte("s3cret"), "A": []byte("from-secret")}},
	)
	pod := envTestPod()
	pc := &podContext{pod: pod, podIP: "127.1.0.2", hostIP: "127.0.0.1", node: &NodeSpec{CPU: "4", Memory: "8Gi"}, clientset: cs}
	c := &v1.Container{
		Name: "etcd",
		EnvFrom: []v1.EnvFromSource{
			{ConfigMapRef: &v1.ConfigMapEnvSource{LocalObjectReference: v1.LocalObjectReference{Name: "cfg"}}},
			{Prefix: "S_", SecretRef: &v1.SecretEnvSource{LocalObjectReference: v1.LocalObjectReference{Name: "sec"}}},
			{ConfigMapRef: &v1.ConfigMapEnvSource{LocalObjectReference: v1.LocalObjectReference{Name: "missing"}, Optional: ptr.To(true)}},
		},
		Env: []v1.EnvVar{
			{Name: "POD_IP", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: "status.podIP"}}},
			{Name: "POD_NAME", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
			{Name: "NS", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.namespace"}}},
			{Name: "UID", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.uid"}}},
			{Name: "MEMBER", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.labels['member']"}}},
			{Name: "NOTE", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.annotations['note']"}}},
			{Name: "NODE", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: "spec.nodeName"}}},
			{Name: "SA", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: "spec.serviceAccountName"}}},
			{Name: "HOST_IP", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: "status.hostIP"}}},
			{Name: "PW", ValueFrom: &v1.EnvVarSource{SecretKeyRef: &v1.SecretKeySelector{LocalObjectReference: v1.LocalObjectReference{Name: "sec"}, Key: "password"}}},
			{Name: "CMB", ValueFrom: &v1.EnvVarSource{ConfigMapKeyRef: &v1.ConfigMapKeySelector{LocalObjectReference: v1.LocalObjectReference{Name: "cfg"}, Key: "B"}}},
			{Name: "OPT", ValueFrom: &v1.EnvVarSource{SecretKeyRef: &v1.SecretKeySelector{LocalObjectReference: v1.LocalObjectReference{Name: "sec"}, Key: "nope", Optional: ptr.To(true)}}},
			{Name: "CPU", ValueFrom: &v1.EnvVarSource{ResourceFieldRef: &v1.ResourceFieldSelector{Resource: "limits.cpu"}}},
			{Name: "MEM_MI", ValueFrom: &v1.EnvVarSource{ResourceFieldRef: &v1.ResourceFieldSelector{Resource: "limits.memory", Divisor: resource.MustParse("1Mi")}}},
			{Name: "URL", Value: "http://$(POD_IP):2379"},
			{Name: "LATER", Value: "$(DEFINED_AFTER)"},
			{Name: "DEFINED_AFTER", Value: "x"},
			{Name: "ESC", Value: "$$(POD_IP)"},
			{Name: "A", Value: "override-$(A)"},
		},
	}
	base := []string{"PATH=/bin", "KUBERNETES_SERVICE_HOST=127.0.0.1"}
	env, err := pc.containerEnv(context.Background(), base, c)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"PATH=/bin", "KUBERNETES_SERVICE_HOST=127.0.0.1",
		"A=override-from-cm", "B=b", // envFrom in order; the env entry later replaces A in place
		"S_A=from-secret", "S_password=s3cret",
		"POD_IP=127.1.0.2", "POD_NAME=m1", "NS=ns", "UID=uid-1", "MEMBER=m1", `NOTE=a"b`,
		"NODE=node-a", "SA=etcd", "HOST_IP=127.0.0.1", "PW=s3cret", "CMB=b",
		"CPU=4", "MEM_MI=8192",
		"URL=http://127.1.0.2:2379", "LATER=$(DEFINED_AFTER)", "DEFINED_AFTER=x", "ESC=$(POD_IP)",
	}
	if !reflect.DeepEqual(env, want) {
		t.Fatalf("env:\n got %q\nwant %q", env, want)
	}

	// A missing non-optional reference is an error (the container cannot start).
	c2 := &v1.Container{Env: []v1.EnvVar{{Name: "X", ValueFrom: &v1.EnvVarSource{SecretKeyRef: &v1.SecretKeySelector{LocalObjectReference: v1.LocalObjectReference{Name: "absent"}, Key: "k"}}}}}
	if _, err := pc.containerEnv(context.Background(), nil, c2); err == nil || !strings.Contains(err.Error(), "absent") {
		t.Fatalf("missing secret: err = %v", err)
	}
	c3 := &v1.Container{Env: []v1.EnvVar{{Name: "X", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: "spec.bogus"}}}}}
	if _, err := pc.containerEnv(context.Background(), nil, c3); err == nil {
		t.Fatal("unsupported fieldRef accepted")
	}
}

func TestFieldValueLabelsFormat(t *testing.T) {
	pc := &podContext{pod: envTestPod()}
	got, err := pc.fieldValue("metadata.labels")
	if err != nil {
		t.Fatal(err)
	}
	if got != "app=\"etcd\"\nmember=\"m1\"" {
		t.Fatalf("labels = %q", got)
	}
	if v, _ := pc.fieldValue("metadata.labels['absent']"); v != "" {
		t.Fatalf("absent label = %q", v)
	}
}
