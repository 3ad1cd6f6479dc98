"""template.yaml: valid SAM, every contract route wired to a real handler, pins in step."""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
TEMPLATE = ROOT / "template.yaml"

CONTRACT_ROUTES = {
    ("POST", "/v1/memories"),
    ("POST", "/v1/memories/batch"),
    ("POST", "/v1/retrieve"),
    ("POST", "/v1/reflect"),
    ("POST", "/v1/context"),
    ("GET", "/v1/users/{user_id}/memories"),
    ("GET", "/v1/memories/{memory_id}"),
    ("DELETE", "/v1/memories/{memory_id}"),
    ("POST", "/v1/semantic/{memory_id}/approve"),
    ("POST", "/v1/semantic/{memory_id}/reject"),
    ("DELETE", "/v1/users/{user_id}"),
    ("GET", "/v1/health"),
    ("POST", "/mcp"),
}


class _CfnLoader(yaml.SafeLoader):
    """Reads CloudFormation short tags (!Ref, !Sub, ...) as plain values."""


def _any_tag(loader: yaml.SafeLoader, suffix: str, node: yaml.Node) -> object:
    if isinstance(node, yaml.ScalarNode):
        return loader.construct_scalar(node)
    if isinstance(node, yaml.SequenceNode):
        return loader.construct_sequence(node)
    return loader.construct_mapping(node)


_CfnLoader.add_multi_constructor("!", _any_tag)


@pytest.fixture(scope="module")
def template() -> dict:
    return yaml.load(TEMPLATE.read_text(), Loader=_CfnLoader)


def functions(template: dict) -> dict[str, dict]:
    return {
        name: resource
        for name, resource in template["Resources"].items()
        if resource["Type"] == "AWS::Serverless::Function"
    }


def test_cfn_lint_passes() -> None:
    cfn_lint = str(Path(sys.executable).parent / "cfn-lint")
    if not Path(cfn_lint).exists():
        pytest.fail("cfn-lint is not installed; it comes with `pip install -e '.[test]'`")
    result = subprocess.run([cfn_lint, str(TEMPLATE)], capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stdout + result.stderr


def test_every_contract_route_is_served(template: dict) -> None:
    routes = set()
    for resource in functions(template).values():
        for event in resource["Properties"].get("Events", {}).values():
            if event["Type"] == "Api":
                routes.add((event["Properties"]["Method"].upper(), event["Properties"]["Path"]))
    assert routes >= CONTRACT_ROUTES, sorted(CONTRACT_ROUTES - routes)


def handler_file(resource: dict, default_handler: str) -> tuple[Path, str]:
    """The file and attribute a function's handler names (zip, or image command)."""
    props = resource["Properties"]
    if props.get("PackageType") == "Image":
        # the image copies functions/<name>/ to <name>/ (infrastructure/lambda-image)
        module_name, _, attribute = props["ImageConfig"]["Command"][0].rpartition(".")
        return ROOT / "functions" / f"{module_name.replace('.', '/')}.py", attribute
    handler = props.get("Handler", default_handler)
    module_name, _, attribute = handler.rpartition(".")
    return ROOT / props["CodeUri"] / f"{module_name.replace('.', '/')}.py", attribute


def test_every_handler_resolves_to_a_lambda_handler(template: dict) -> None:
    default_handler = template["Globals"]["Function"].get("Handler", "app.lambda_handler")
    for name, resource in functions(template).items():
        path, attribute = handler_file(resource, default_handler)
        assert path.is_file(), f"{name}: {path} does not exist"
        spec = importlib.util.spec_from_file_location(f"infra_check_{name}", path)
        assert spec and spec.loader
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module  # as an import would (dataclasses look it up)
        try:
            spec.loader.exec_module(module)
        finally:
            sys.modules.pop(spec.name, None)
        assert callable(getattr(module, attribute, None)), f"{name}: no {attribute} in {path}"


def _pins(lines: list[str]) -> dict[str, str]:
    pins = {}
    for line in lines:
        line = line.split("#", 1)[0].strip()
        match = re.match(r"^([A-Za-z0-9_.\-]+)(\[[^\]]*\])?==([^\s;]+)", line)
        if match:
            pins[match.group(1).lower()] = match.group(3)
    return pins


def test_lambda_requirements_pin_the_same_versions_as_pyproject() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    declared = _pins(project["dependencies"])
    requirement_files = [ROOT / "layers/hindsight/requirements.txt"]
    requirement_files += sorted((ROOT / "functions").glob("*/requirements.txt"))
    for path in requirement_files:
        for name, version in _pins(path.read_text().splitlines()).items():
            assert declared.get(name) == version, f"{path}: {name}=={version} vs pyproject"
    layer = _pins((ROOT / "layers/hindsight/requirements.txt").read_text().splitlines())
    runtime_imports = {"pydantic", "numpy", "jieba", "aws-lambda-powertools", "python-ulid"}
    assert runtime_imports <= set(layer)


def test_table_expires_items_by_the_expires_at_attribute(template: dict) -> None:
    table = template["Resources"]["MemoriesTable"]["Properties"]
    assert table["TimeToLiveSpecification"] == {"AttributeName": "expires_at", "Enabled": True}
