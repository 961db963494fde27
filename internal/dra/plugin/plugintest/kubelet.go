// Package plugintest stands in for the kubelet and the device library in
// plugin tests: it registers with a DRA plugin over its registration socket
// and calls NodePrepareResources / NodeUnprepareResources over gRPC, and it
// feeds health events.
package plugintest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	resourceapi "k8s.io/api/resource/v1"
	drapb "k8s.io/kubelet/pkg/apis/dra/v1"
	registerapi "k8s.io/kubelet/pkg/apis/pluginregistration/v1"

	"github.com/gpuplane/gpuplane/internal/dra/plugin"
)

// Kubelet is the kubelet's side of the plugin protocol.
type Kubelet struct {
	RegistrarDir string
	conn         *grpc.ClientConn
	client       drapb.DRAPluginClient
}

// Register finds the plugin's registration socket, asks it for its info,
// confirms the registration and connects to its DRA endpoint.
func (k *Kubelet) Register(ctx context.Context) (*registerapi.PluginInfo, error) {
	entries, err := os.ReadDir(k.RegistrarDir)
	if err != nil {
		return nil, err
	}
	var sock string
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), plugin.DriverName) && strings.HasSuffix(e.Name(), ".sock") {
			sock = filepath.Join(k.RegistrarDir, e.Name())
		}
	}
	if sock == "" {
		return nil, fmt.Errorf("no registration socket for %s in %s", plugin.DriverName, k.RegistrarDir)
	}
	rc, err := grpc.NewClient("unix://"+sock, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	reg := registerapi.NewRegistrationClient(rc)
	info, err := reg.GetInfo(ctx, &registerapi.InfoRequest{})
	if err != nil {
		return nil, fmt.Errorf("GetInfo: %w", err)
	}
	if info.Type != registerapi.DRAPlugin || info.Name != plugin.DriverName {
		return info, fmt.Errorf("plugin info %+v", info)
	}
	if _, err := reg.NotifyRegistrationStatus(ctx, &registerapi.RegistrationStatus{PluginRegistered: true}); err != nil {
		return info, fmt.Errorf("NotifyRegistrationStatus: %w", err)
	}
	if k.conn, err = grpc.NewClient("unix://"+info.Endpoint, grpc.WithTransportCredentials(insecure.NewCredentials())); err != nil {
		return info, err
	}
	k.client = drapb.NewDRAPluginClient(k.conn)
	return info, nil
}

// Close drops the connection.
func (k *Kubelet) Close() {
	if k.conn != nil {
		k.conn.Close()
	}
}

func claims(cs []*resourceapi.ResourceClaim) []*drapb.Claim {
	out := make([]*drapb.Claim, len(cs))
	for i, c := range cs {
		out[i] = &drapb.Claim{Namespace: c.Namespace, Name: c.Name, Uid: string(c.UID)}
	}
	return out
}

// Prepare calls NodePrepareResources for the claims.
func (k *Kubelet) Prepare(ctx context.Context, cs ...*resourceapi.ResourceClaim) (map[string]*drapb.NodePrepareResourceResponse, error) {
	r, err := k.client.NodePrepareResources(ctx, &drapb.NodePrepareResourcesRequest{Claims: claims(cs)})
	if err != nil {
		return nil, err
	}
	return r.Claims, nil
}

// Unprepare calls NodeUnprepareResources for the claims.
func (k *Kubelet) Unprepare(ctx context.Context, cs ...*resourceapi.ResourceClaim) (map[string]*drapb.NodeUnprepareResourceResponse, error) {
	r, err := k.client.NodeUnprepareResources(ctx, &drapb.NodeUnprepareResourcesRequest{Claims: claims(cs)})
	if err != nil {
		return nil, err
	}
	return r.Claims, nil
}

// Health is a health source the test drives.
type Health struct{ C chan plugin.HealthEvent }

// NewHealth makes a health source with a buffered channel.
func NewHealth() *Health { return &Health{C: make(chan plugin.HealthEvent, 16)} }

// Watch returns the test's channel.
func (h *Health) Watch(context.Context) (<-chan plugin.HealthEvent, error) { return h.C, nil }
