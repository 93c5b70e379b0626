package bench

import (
	"context"
	"fmt"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/types/known/emptypb"
)

// criVersionMethod is the CRI call the kubelet makes first; containerd answers it with
// "server is not initialized yet" until its CRI service runs, and a kubelet that gets
// that answer exits. An empty message is a valid VersionRequest, and the reply's fields
// are simply unknown to an Empty.
const criVersionMethod = "/runtime.v1.RuntimeService/Version"

// waitCRI waits until containerd's CRI service at sock answers, failing early if p
// (containerd) exits. A socket that exists is not enough: after a reboot containerd
// listens well before its CRI service has loaded its state.
func waitCRI(sock string, budget time.Duration, p *process) error {
	conn, err := grpc.NewClient("unix://"+sock, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return err
	}
	defer conn.Close()
	deadline := time.Now().Add(budget)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		err = conn.Invoke(ctx, criVersionMethod, &emptypb.Empty{}, &emptypb.Empty{})
		cancel()
		if err == nil {
			return nil
		}
		if gone, perr := p.exited(); gone {
			return perr
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("containerd's CRI service at %s did not answer within %v: %w", sock, budget, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
