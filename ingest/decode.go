package ingest

// decoders maps each format to its decoder.
var decoders = map[Format]decodeFunc{
	FormatOTLPJSON:         decodeOTLPJSON,
	FormatOTLPProto:        decodeOTLPProto,
	FormatOTLPProtoFramed:  decodeOTLPProtoFramed,
	FormatJaegerJSON:       decodeJaegerJSON,
	FormatZipkinJSON:       decodeZipkinJSON,
	FormatSpanCSV:          decodeSpanCSV,
	FormatPromText:         decodePromText,
	FormatPromAPI:          decodePromAPI,
	FormatOTLPMetricsJSON:  decodeOTLPMetricsJSON,
	FormatOTLPMetricsProto: decodeOTLPMetricsProto,
	FormatMetricCSV:        decodeMetricCSV,
}
