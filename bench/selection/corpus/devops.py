"""DEVOPS: shell scripts, Dockerfiles and Kubernetes manifests, each with two subtly wrong
answers and the right one last. Most wrong ones are *lint-visible*: the field's own tool
(shellcheck, hadolint, yamllint, the manifest schema) reports what is wrong with them. The
ones labeled ``tests`` lint clean and are wrong in what they do (a retry loop one attempt
short, a port the app does not listen on); the sandbox does not run shell or containers, so
no check here can tell, and the benchmark reports them apart."""

from __future__ import annotations

from bench.selection.corpus import SelectionCase


def _case(
    task_id: str, task: str, lang: str, wrongs: list[str], right: str, *, expect: str
) -> SelectionCase:
    answers = [f"Here it is.\n\n```{lang}\n{c.strip()}\n```\n" for c in (*wrongs, right)]
    return SelectionCase(task_id, "DEVOPS", task, answers, len(wrongs), "", {"expect": expect})


def _deployment(labels: str, selector: str, port: str, replicas: str = "2") -> str:
    return f"""
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: {replicas}
  selector:
    matchLabels:
      app: {selector}
  template:
    metadata:
      labels:
        app: {labels}
    spec:
      containers:
        - name: web
          image: nginx:1.27
          ports:
            - containerPort: {port}
"""


def _service(selector: str, port: str = "80", kind: str = "ClusterIP") -> str:
    return f"""
apiVersion: v1
kind: Service
metadata:
  name: web
spec:
  type: {kind}
  selector:
    app: {selector}
  ports:
    - port: {port}
      targetPort: 8080
"""


def _cronjob(schedule: str, api: str = "batch/v1") -> str:
    return f"""
apiVersion: {api}
kind: CronJob
metadata:
  name: nightly-report
spec:
  schedule: "{schedule}"
  jobTemplate:
    spec:
      template:
        spec:
          restartPolicy: OnFailure
          containers:
            - name: report
              image: registry.example.com/report:1.4.2
              args: ["--since", "24h"]
"""


def _configmap(body: str) -> str:
    return f"""
apiVersion: v1
kind: ConfigMap
metadata:
  name: app-config
data:
{body}
"""


CASES = [
    _case(
        "backup-copy",
        "Write a bash script that copies every file of directory $1 into directory $2.",
        "bash",
        [
            "#!/bin/bash\nset -euo pipefail\nsrc=$1\ndest=$2\nmkdir -p $dest\n"
            "cp -r $src/. $dest/\n",
            '#!/bin/bash\nset -uo pipefail\ncd "$1"\ncp -r . "$2"/\n',
        ],
        '#!/bin/bash\nset -euo pipefail\nsrc="$1"\ndest="$2"\nmkdir -p "$dest"\n'
        'cp -r "$src"/. "$dest"/\n',
        expect="lint-visible",
    ),
    _case(
        "count-logs",
        "Write a bash script that prints how many .log files are in the current directory and "
        "exits 1 when there are more than 10.",
        "bash",
        [
            "#!/bin/bash\ncount=0\nfor f in $(ls *.log); do\n  count=$((count + 1))\n"
            '  echo "$f"\ndone\necho "$count"\nif [ "$count" -gt 10 ]; then\n  exit 1\nfi\n',
            '#!/bin/bash\nshopt -s nullglob\nfiles=(*.log)\ncount=${#files[@]}\necho "$count"\n'
            "if [ $count > 10 ]; then\n  exit 1\nfi\n",
        ],
        '#!/bin/bash\nshopt -s nullglob\nfiles=(*.log)\ncount=${#files[@]}\necho "$count"\n'
        'if [ "$count" -gt 10 ]; then\n  exit 1\nfi\n',
        expect="lint-visible",
    ),
    _case(
        "read-lines",
        "Write a bash script that prints each line of the file $1 prefixed by its number, "
        "keeping backslashes and leading spaces.",
        "bash",
        [
            '#!/bin/bash\nn=0\nwhile read line; do\n  n=$((n + 1))\n  printf "%d %s\\n'
            '" "$n" "$line"\n'
            'done < "$1"\n',
            "#!/bin/bash\nn=0\nwhile IFS= read -r line; do\n  n=$((n + 1))\n  echo $n $line\n"
            'done < "$1"\n',
        ],
        "#!/bin/bash\nn=0\nwhile IFS= read -r line; do\n  n=$((n + 1))\n"
        '  printf "%d %s\\n" "$n" "$line"\ndone < "$1"\n',
        expect="lint-visible",
    ),
    _case(
        "retry",
        "Write a bash script that runs the command given as arguments up to 3 times until it "
        "succeeds, and exits 1 if all attempts fail.",
        "bash",
        [
            '#!/bin/bash\nfor attempt in 1 2; do\n  if "$@"; then\n    exit 0\n  fi\n'
            '  echo "attempt $attempt failed" >&2\n  sleep 1\ndone\nexit 1\n',
            '#!/bin/bash\nfor attempt in 1 2 3; do\n  if "$@"; then\n    break\n  fi\n'
            '  echo "attempt $attempt failed" >&2\n  sleep 1\ndone\nexit 0\n',
        ],
        '#!/bin/bash\nfor attempt in 1 2 3; do\n  if "$@"; then\n    exit 0\n  fi\n'
        '  echo "attempt $attempt failed" >&2\n  sleep 1\ndone\nexit 1\n',
        expect="tests",
    ),
    _case(
        "python-image",
        "Write a Dockerfile for a Python 3.12 app (app.py, requirements.txt) run as "
        "`python app.py`.",
        "dockerfile",
        [
            "FROM python:3.12-slim\nWORKDIR /app\nCOPY requirements.txt .\n"
            "RUN pip install --no-cache-dir -r requirements.txt\nADD . /app\n"
            'CMD ["python", "app.py"]\n',
            "FROM python:3.12-slim\nWORKDIR /app\nCOPY requirements.txt .\n"
            "RUN pip install --no-cache-dir -r requirements.txt\nCOPY . .\nCMD python app.py\n",
        ],
        "FROM python:3.12-slim\nWORKDIR /app\nCOPY requirements.txt .\n"
        "RUN pip install --no-cache-dir -r requirements.txt\nCOPY . .\n"
        'CMD ["python", "app.py"]\n',
        expect="lint-visible",
    ),
    _case(
        "build-image",
        "Write a Dockerfile that builds the C project in the context with `make` on Debian "
        "bookworm and runs ./server.",
        "dockerfile",
        [
            "FROM debian:latest\nRUN apt-get update && apt-get install -y --no-install-recommends "
            "build-essential && rm -rf /var/lib/apt/lists/*\nWORKDIR /src\nCOPY . .\n"
            'RUN make\nCMD ["./server"]\n',
            "FROM debian:bookworm-slim\nRUN apt-get update && apt-get install -y "
            "--no-install-recommends build-essential && rm -rf /var/lib/apt/lists/*\n"
            'COPY . /src\nRUN cd /src && make\nCMD ["/src/server"]\n',
        ],
        "FROM debian:bookworm-slim\nRUN apt-get update && apt-get install -y "
        "--no-install-recommends build-essential && rm -rf /var/lib/apt/lists/*\n"
        'WORKDIR /src\nCOPY . .\nRUN make\nCMD ["./server"]\n',
        expect="lint-visible",
    ),
    _case(
        "node-image",
        "Write a Dockerfile for a Node 20 service: install production dependencies with npm ci "
        "and start with `node server.js`, as a non-root user.",
        "dockerfile",
        [
            "FROM node:20-slim\nWORKDIR /app\nCOPY package*.json ./\nRUN npm ci --omit=dev\n"
            'COPY . .\nUSER root\nCMD ["node", "server.js"]\n',
            "FROM node:20-slim\nWORKDIR /app\nCOPY package*.json ./\nRUN sudo npm ci --omit=dev\n"
            'COPY . .\nUSER node\nCMD ["node", "server.js"]\n',
        ],
        "FROM node:20-slim\nWORKDIR /app\nCOPY package*.json ./\nRUN npm ci --omit=dev\n"
        'COPY . .\nUSER node\nCMD ["node", "server.js"]\n',
        expect="lint-visible",
    ),
    _case(
        "port-image",
        "Write a Dockerfile for the Go binary ./api that listens on port 8080.",
        "dockerfile",
        [
            "FROM gcr.io/distroless/base-debian12:nonroot\nCOPY api /api\nEXPOSE 8000\n"
            'ENTRYPOINT ["/api"]\n',
            "FROM gcr.io/distroless/base-debian12:nonroot\nCOPY api /usr/local/api\nEXPOSE 8080\n"
            'ENTRYPOINT ["/api"]\n',
        ],
        "FROM gcr.io/distroless/base-debian12:nonroot\nCOPY api /api\nEXPOSE 8080\n"
        'ENTRYPOINT ["/api"]\n',
        expect="tests",
    ),
    _case(
        "deployment",
        "Write a Kubernetes Deployment 'web' with 2 replicas of nginx:1.27 serving on port 80.",
        "yaml",
        [_deployment("webapp", "web", "80"), _deployment("web", "web", '"80"')],
        _deployment("web", "web", "80"),
        expect="lint-visible",
    ),
    _case(
        "service",
        "Write a Deployment 'web' (nginx:1.27, port 80) and a ClusterIP Service 'web' on "
        "port 80 in front of it.",
        "yaml",
        [
            _deployment("web", "web", "80") + "---" + _service("frontend"),
            _deployment("web", "web", "80") + "---" + _service("web", kind="Clusterip"),
        ],
        _deployment("web", "web", "80") + "---" + _service("web"),
        expect="lint-visible",
    ),
    _case(
        "cronjob",
        "Write a Kubernetes CronJob 'nightly-report' that runs the report image every night "
        "at 02:00.",
        "yaml",
        [_cronjob("0 2 * *"), _cronjob("0 2 * * *", api="batch/v1beta1")],
        _cronjob("0 2 * * *"),
        expect="lint-visible",
    ),
    _case(
        "configmap",
        "Write a ConfigMap 'app-config' with LOG_LEVEL=info, WORKERS=4 and FEATURE_X=on.",
        "yaml",
        [
            _configmap('  LOG_LEVEL: info\n  WORKERS: "4"\n  FEATURE_X: "on"\n  LOG_LEVEL: debug'),
            _configmap('  LOG_LEVEL: info\n  WORKERS: 4\n  FEATURE_X: "on"'),
        ],
        _configmap('  LOG_LEVEL: info\n  WORKERS: "4"\n  FEATURE_X: "on"'),
        expect="lint-visible",
    ),
    _case(
        "replicas",
        "Write a Kubernetes Deployment 'web' with 3 replicas of nginx:1.27 on port 80.",
        "yaml",
        [_deployment("web", "web", "80", replicas='"3"'), _deployment("web", "web", "80")],
        _deployment("web", "web", "80", replicas="3"),
        expect="tests",
    ),
]
