FROM python:3.13-slim
WORKDIR /app
COPY pyproject.toml README.md ./
COPY analysis analysis
COPY ingest ingest
COPY db db
COPY service service
COPY api api
COPY dashboard dashboard
COPY moedash moedash
# static/ stays beside the working directory: the installed app serves ./static (moedash.app)
COPY static static
# the published-data snapshot (data/published, with its NOTICE), found from ./data
COPY data data
RUN pip install --no-cache-dir .
# the smaller plotly.js bundle and regenerator-runtime (in place of Dash's polyfill) from the
# npm registry (sha512-checked); without them the app falls back to Dash's own files
RUN python -c "from pathlib import Path; from moedash.assets import PLOTLY_BASIC, REGENERATOR, fetch; [fetch(a, Path('static/vendor')) for a in (PLOTLY_BASIC, REGENERATOR)]" \
    || echo "front-end assets not fetched: Dash's plotly.js is used"
ENV MOEDASH_HOST=0.0.0.0 MOEDASH_PORT=8050
# two malloc arenas, not 8 per core: freed pandas/Arrow buffers of a cell read are not
# held once per request thread (docs/scale.md; the app also sets it at start)
ENV MALLOC_ARENA_MAX=2
EXPOSE 8050
CMD ["moedash", "serve", "--no-demo"]
