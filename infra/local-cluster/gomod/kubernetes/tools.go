//go:build tools

// Package tools pins the Kubernetes commands this wrapper module builds.
// k8s.io/kubernetes cannot be `go install`ed (its go.mod replaces the staging
// modules with local paths), so this module requires it and points each
// staging module at its published k8s.io/<name> v0.x release instead.
package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-proxy"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
	_ "k8s.io/kubernetes/cmd/kubelet"
	_ "k8s.io/kubernetes/cmd/kubectl"
)
