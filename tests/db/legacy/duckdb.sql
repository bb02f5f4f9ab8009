-- The schema the hand-made migrations (db/migrations.py before alembic) created on
-- DuckDB, statement by statement as they sent it; `-- version N` starts the
-- statements of hand-made migration N (version 0: their bookkeeping table).
-- tests/db/test_migrations.py builds old databases from it.

-- version 0
CREATE SEQUENCE IF NOT EXISTS moedash_schema_version_version_seq;

CREATE TABLE moedash_schema_version (
	version INTEGER DEFAULT nextval('moedash_schema_version_version_seq') NOT NULL,
	name TEXT NOT NULL,
	applied_at TIMESTAMP WITH TIME ZONE NOT NULL,
	PRIMARY KEY (version)
);

-- version 1
CREATE SEQUENCE upload_id_seq;

CREATE TABLE uploads (
	upload_id BIGINT NOT NULL,
	sha256 TEXT NOT NULL,
	filename TEXT,
	source_format TEXT NOT NULL,
	size_bytes BIGINT NOT NULL,
	compression TEXT NOT NULL,
	content BYTEA NOT NULL,
	meta_json TEXT NOT NULL,
	uploaded_by TEXT,
	uploaded_at TIMESTAMP WITH TIME ZONE NOT NULL,
	PRIMARY KEY (upload_id),
	UNIQUE (sha256)
);

CREATE SEQUENCE run_id_seq;

CREATE TABLE runs (
	run_id BIGINT NOT NULL,
	upload_id BIGINT NOT NULL,
	run_key TEXT NOT NULL,
	sweep_key TEXT NOT NULL,
	source_format TEXT,
	model TEXT,
	num_experts BIGINT,
	top_k BIGINT,
	hidden_size BIGINT,
	intermediate_size BIGINT,
	quant TEXT,
	hardware TEXT,
	world_size BIGINT,
	trtllm_version TEXT,
	trtllm_commit TEXT,
	run_date TEXT,
	synthetic BOOLEAN,
	device_name TEXT,
	sm BIGINT,
	cuda_version TEXT,
	torch_version TEXT,
	driver_version TEXT,
	routing_method TEXT,
	ci_url TEXT,
	notes TEXT,
	dispatch TEXT,
	model_json TEXT,
	environment_json TEXT,
	search_json TEXT,
	base_config_json TEXT,
	rankings_json TEXT,
	extra_json TEXT,
	warnings_json TEXT,
	n_candidates BIGINT NOT NULL,
	n_success BIGINT NOT NULL,
	n_failed BIGINT NOT NULL,
	n_skipped BIGINT NOT NULL,
	created_at TIMESTAMP WITH TIME ZONE NOT NULL,
	PRIMARY KEY (run_id),
	UNIQUE (run_key)
);

CREATE TABLE candidates (
	run_id BIGINT NOT NULL,
	candidate_index BIGINT NOT NULL,
	num_tokens BIGINT,
	per_rank_num_tokens TEXT,
	parallel_mode TEXT,
	attention_dp BOOLEAN,
	attn TEXT,
	moe_ep_size BIGINT,
	moe_tp_size BIGINT,
	backend TEXT,
	requested_backend TEXT,
	comm TEXT,
	comm_requested TEXT,
	comm_actual TEXT,
	cuda_graph BOOLEAN,
	low_precision_combine BOOLEAN,
	dispatch TEXT,
	status TEXT,
	failure_category TEXT,
	skip_reason TEXT,
	score_ms DOUBLE,
	raw_score_ms DOUBLE,
	score_type TEXT,
	iter_mean_ms DOUBLE,
	iter_median_ms DOUBLE,
	iter_stdev_ms DOUBLE,
	iter_min_ms DOUBLE,
	iter_max_ms DOUBLE,
	iter_p90_ms DOUBLE,
	outlier_count BIGINT,
	n_iters BIGINT,
	autotune_status TEXT,
	bottleneck TEXT,
	scheduler_kind TEXT,
	num_chunks BIGINT,
	routing_status TEXT,
	off_diagonal_ratio DOUBLE,
	active_experts BIGINT,
	source_rank BIGINT,
	per_rank_json TEXT,
	extra_json TEXT,
	CONSTRAINT candidates_pk PRIMARY KEY (run_id, candidate_index)
);

CREATE SEQUENCE token_id_seq;

CREATE TABLE api_tokens (
	token_id BIGINT NOT NULL,
	name TEXT NOT NULL,
	scopes TEXT NOT NULL,
	token_hash TEXT NOT NULL,
	prefix TEXT NOT NULL,
	created_at TIMESTAMP WITH TIME ZONE NOT NULL,
	revoked_at TIMESTAMP WITH TIME ZONE,
	last_used_at TIMESTAMP WITH TIME ZONE,
	PRIMARY KEY (token_id),
	UNIQUE (name),
	UNIQUE (token_hash)
);

-- version 2
CREATE INDEX IF NOT EXISTS runs_facets ON runs (model, hardware, quant, world_size);

-- version 3
CREATE SEQUENCE serving_import_id_seq;

CREATE TABLE serving_imports (
	import_id BIGINT NOT NULL,
	content_hash TEXT NOT NULL,
	source TEXT,
	imported_at TIMESTAMP WITH TIME ZONE NOT NULL,
	n_entries BIGINT NOT NULL,
	n_points BIGINT NOT NULL,
	n_workloads BIGINT NOT NULL,
	n_mappable BIGINT NOT NULL,
	n_new_workloads BIGINT NOT NULL,
	n_updated_workloads BIGINT NOT NULL,
	PRIMARY KEY (import_id),
	UNIQUE (content_hash)
);

CREATE TABLE serving_workloads (
	workload_id TEXT NOT NULL,
	import_id BIGINT NOT NULL,
	updated_import_id BIGINT NOT NULL,
	ordinal BIGINT NOT NULL,
	point_id TEXT NOT NULL,
	phase TEXT NOT NULL,
	model TEXT,
	quant TEXT,
	hardware TEXT,
	world_size BIGINT,
	num_tokens BIGINT,
	cuda_graph BOOLEAN,
	attention_dp BOOLEAN,
	backend TEXT,
	moe_ep_size BIGINT,
	moe_tp_size BIGINT,
	comm TEXT,
	comm_forced BOOLEAN,
	mappable BOOLEAN NOT NULL,
	unmapped_reason TEXT,
	entry TEXT NOT NULL,
	conc BIGINT,
	isl BIGINT,
	osl BIGINT,
	config_file TEXT,
	row_json TEXT NOT NULL,
	PRIMARY KEY (workload_id)
);

CREATE TABLE crossval_outcomes (
	workload_id TEXT NOT NULL,
	tps_per_user_deployed DOUBLE NOT NULL,
	tps_per_user_candidate DOUBLE NOT NULL,
	tps_per_user_candidate_perfect_routing DOUBLE,
	source TEXT,
	notes TEXT,
	created_at TIMESTAMP WITH TIME ZONE NOT NULL,
	updated_at TIMESTAMP WITH TIME ZONE,
	PRIMARY KEY (workload_id)
);

CREATE INDEX IF NOT EXISTS serving_workloads_facets ON serving_workloads (model, hardware, phase);
