# The operator image: `python -m operator_runtime` on Python slim, as a non-root user.
#
#   docker build -t pulumi-ray/operator:0.1.0 .
#
# RayOperator deploys pulumi-ray/operator:<package version> unless given another image;
# its Deployment runs the same command as the ENTRYPOINT below (components.operator.
# OPERATOR_COMMAND; tests/components/test_operator.py holds the two equal).

FROM python:3.11-slim-bookworm AS build
WORKDIR /src
COPY pyproject.toml README.md ./
COPY operator_runtime ./operator_runtime
# The operator needs neither Pulumi nor the components (DESIGN.md section 2): build the
# wheel alone, and list the project's dependencies minus Pulumi's, so pyproject.toml
# stays the one list of them.
RUN pip wheel --no-cache-dir --no-deps --wheel-dir /wheels . \
 && python -c "import tomllib; deps = tomllib.load(open('pyproject.toml', 'rb'))['project']['dependencies']; print('\n'.join(d for d in deps if not d.startswith('pulumi')))" \
    > /wheels/requirements.txt

FROM python:3.11-slim-bookworm
ENV PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1
COPY --from=build /wheels /wheels
# pip compiles the bytecode here, since the pod's root filesystem is read-only; the last
# import fails the build, not the first pod, if a dependency is missing.
RUN pip install --no-cache-dir -r /wheels/requirements.txt \
 && pip install --no-cache-dir --no-deps /wheels/*.whl \
 && rm -rf /wheels \
 && python -c "import operator_runtime.__main__, operator_runtime.controllers"
# Numeric, so the kubelet can verify the pod's runAsNonRoot without a passwd lookup.
USER 65532:65532
ENTRYPOINT ["python", "-m", "operator_runtime"]
