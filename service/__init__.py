"""The one read path: cached frames from db/, analysis/ over them, answers for API and pages."""
