package plugin

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"

	"k8s.io/apimachinery/pkg/types"

	"github.com/gpuplane/gpuplane/internal/atomicfile"
)

// CheckpointVersion is the layout of the checkpoint file. A newer layout
// gets a new version and a migration in readCheckpoint.
const CheckpointVersion = "gpu.gpuplane.io/checkpoint/v1"

// PreparedDevice is one device prepared for a claim: enough to answer a
// repeated prepare and to undo it after a restart.
type PreparedDevice struct {
	Request     string     `json:"request"`
	Pool        string     `json:"pool"`
	Device      string     `json:"device"`
	ShareID     *types.UID `json:"shareID,omitempty"`
	CDIDeviceID string     `json:"cdiDeviceID"`
	// UUID is what the container sees: the GPU's, or the MIG device's.
	UUID     string `json:"uuid"`
	Kind     string `json:"kind"`
	Profile  string `json:"profile,omitempty"`
	GPUUUID  string `json:"gpuUUID"`
	Start    int    `json:"start,omitempty"`
	Dynamic  bool   `json:"dynamic,omitempty"`
	MemoryMi int64  `json:"memoryMi,omitempty"`
	// ComputePercent caps SMs through MPS (0: no cap).
	ComputePercent int        `json:"computePercent,omitempty"`
	Config         *GpuConfig `json:"config,omitempty"`
}

// PreparedClaim is one claim's prepared devices.
type PreparedClaim struct {
	Namespace string           `json:"namespace"`
	Name      string           `json:"name"`
	Devices   []PreparedDevice `json:"devices"`
}

type checkpointFile struct {
	Version  string                      `json:"version"`
	Checksum string                      `json:"checksum"`
	Claims   map[types.UID]PreparedClaim `json:"claims"`
}

func checksum(claims map[types.UID]PreparedClaim) (string, error) {
	b, err := json.Marshal(claims) // map keys are sorted: stable bytes
	if err != nil {
		return "", err
	}
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:]), nil
}

// recovery is what an operator does about a checkpoint the plugin cannot trust.
const recovery = "to recover, drain the node's pods that use gpu.gpuplane.io claims, move the file aside and restart the plugin (it then starts with no claims prepared); dynamic MIG partitions left behind show in nvidia-smi mig -lgi and can be destroyed there"

// readCheckpoint loads the prepared claims; a missing file is an empty
// checkpoint, a corrupt or foreign one an error (the plugin must not forget
// what it prepared).
func readCheckpoint(path string) (map[types.UID]PreparedClaim, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return map[types.UID]PreparedClaim{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read checkpoint: %w", err)
	}
	var f checkpointFile
	if err := json.Unmarshal(b, &f); err != nil {
		return nil, fmt.Errorf("checkpoint %s: %w; %s", path, err, recovery)
	}
	if f.Version != CheckpointVersion {
		return nil, fmt.Errorf("checkpoint %s: version %q, this plugin reads %q", path, f.Version, CheckpointVersion)
	}
	if f.Claims == nil {
		f.Claims = map[types.UID]PreparedClaim{}
	}
	sum, err := checksum(f.Claims)
	if err != nil {
		return nil, err
	}
	if sum != f.Checksum {
		return nil, fmt.Errorf("checkpoint %s: checksum mismatch (file corrupted or edited by hand); %s", path, recovery)
	}
	return f.Claims, nil
}

// writeCheckpoint replaces the file atomically (write, sync, rename, sync the folder).
func writeCheckpoint(path string, claims map[types.UID]PreparedClaim) error {
	sum, err := checksum(claims)
	if err != nil {
		return err
	}
	b, err := json.MarshalIndent(checkpointFile{Version: CheckpointVersion, Checksum: sum, Claims: claims}, "", "  ")
	if err != nil {
		return err
	}
	if err := atomicfile.Write(path, b, 0o600); err != nil {
		return fmt.Errorf("write checkpoint: %w", err)
	}
	return nil
}
