// Tests run outside Lambda: no EMF flush, no X-Ray, quiet logs unless a test asks for them.
process.env.POWERTOOLS_DEV = process.env.POWERTOOLS_DEV ?? 'true';
process.env.POWERTOOLS_TRACE_ENABLED = 'false';
process.env.POWERTOOLS_METRICS_DISABLED = process.env.POWERTOOLS_METRICS_DISABLED ?? 'true';
process.env.POWERTOOLS_LOG_LEVEL = process.env.POWERTOOLS_LOG_LEVEL ?? 'SILENT';
