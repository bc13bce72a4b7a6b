package ingest

import "cascade"

// SharedSuffix ends the span id ingest gives a server span that shared
// its client's id (see unshare).
const SharedSuffix = ".server"

// sharedPair reports whether two spans of one id are a Zipkin shared
// pair: a server (or consumer) span and the client (or producer) span
// whose id it kept.
func sharedPair(a, b *cascade.Span) bool {
	in := func(k cascade.SpanKind) bool { return k == cascade.KindServer || k == cascade.KindConsumer }
	out := func(k cascade.SpanKind) bool { return k == cascade.KindClient || k == cascade.KindProducer }
	return in(a.Kind) && out(b.Kind) || out(a.Kind) && in(b.Kind)
}

// unshare separates shared pairs. Zipkin's B3 model gives an RPC one
// span id: the server's span (Brave's default, Spring Cloud Sleuth,
// "shared": true) keeps its client's id and parent, and the server's own
// calls name that id as their parent. Stored that way, the server span
// would be dropped as a repeat of its client and the server's calls would
// hang from its caller. dups are the second spans of the pairs, each
// kept[index[id]] the first. Each server span gets the id with
// SharedSuffix and its client as its parent, the spans under the shared
// id in the server's service move under it, kept[index[id]] becomes the
// client and the servers are appended; index follows. A pair whose new
// id a span of the trace already has stays as it was, its second span
// dropped as a repeat. It returns kept and how many pairs it separated.
func unshare(kept []cascade.Span, index map[string]int, dups []cascade.Span) ([]cascade.Span, int) {
	moved := make(map[string]*cascade.Span, len(dups)) // shared id -> its server
	first := len(kept)
	for i := range dups {
		if _, taken := index[dups[i].SpanID+SharedSuffix]; taken {
			continue
		}
		j := index[dups[i].SpanID]
		client, server := kept[j], dups[i]
		if client.Kind == cascade.KindServer || client.Kind == cascade.KindConsumer {
			client, server = server, client
		}
		id := client.SpanID
		server.SpanID, server.ParentSpanID = id+SharedSuffix, id
		kept[j] = client
		index[server.SpanID] = len(kept)
		kept = append(kept, server)
	}
	for i := first; i < len(kept); i++ {
		moved[kept[i].ParentSpanID] = &kept[i]
	}
	// The servers themselves (from first on) hang from their clients.
	for i := range kept[:first] {
		if s := moved[kept[i].ParentSpanID]; s != nil && kept[i].Service == s.Service {
			kept[i].ParentSpanID = s.SpanID
		}
	}
	return kept, len(kept) - first
}
