package graph

import (
	"net/netip"
	"strings"
)

// PeerPrefix begins the name of a node that a client span's peer names
// by its network address alone (an IP, or IP and port), with no service
// name: "peer:127.0.0.1:6379", "peer:[::1]:9090", "peer:10.0.0.7". Such
// a node is virtual, an uninstrumented peer at that address, and never a
// service. The address is kept as the span gave it, so the name is
// stable across captures of the same deployment (see docs/model.md).
const PeerPrefix = "peer:"

// peerNode returns the node name of a peer as a client span names it:
// the peer itself when it is a name (peer.service, a host name, a
// database system), PeerPrefix and the address when it is an IP address
// or an IP and port.
func peerNode(peer string) string {
	if isAddress(peer) {
		return PeerPrefix + peer
	}
	return peer
}

// isAddress reports whether s is an IP address, with or without a port
// ("127.0.0.1", "127.0.0.1:6379", "::1", "[::1]:9090").
func isAddress(s string) bool {
	if _, err := netip.ParseAddr(s); err == nil {
		return true
	}
	_, err := netip.ParseAddrPort(s)
	return err == nil
}

// PeerAddress returns the address of a node named for an uninstrumented
// peer (PeerPrefix and an address), and whether name is one.
func PeerAddress(name string) (string, bool) {
	addr, ok := strings.CutPrefix(name, PeerPrefix)
	if !ok || !isAddress(addr) {
		return "", false
	}
	return addr, true
}

// Title is how a node is shown to a reader: its name, or "an
// uninstrumented peer at ADDR" for a node named for a peer's address.
func Title(name string) string {
	if addr, ok := PeerAddress(name); ok {
		return "an uninstrumented peer at " + addr
	}
	return name
}
