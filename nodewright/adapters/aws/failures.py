"""What an AWS failure means to the person at the command line: its cause and the fix, in one line.

Role: the CLI's commands talk to AWS through boto3; when a call fails they print
`error: <what they were doing>: <cause>: <fix>` and exit 2 (`nodewright.cli.failures`), never a
traceback. `describe_aws(error)` gives that "cause: fix" for each class of failure a first day
meets, or None for anything else (a bug, which keeps its traceback):

| failure (botocore)                                | says                                              |
| ------------------------------------------------- | ------------------------------------------------- |
| NoRegionError                                     | no AWS region: pass --region or set AWS_REGION    |
| NoCredentialsError, PartialCredentialsError,      | no AWS credentials: set AWS_PROFILE, run          |
| ProfileNotFound, token/SSO errors                 | `aws sso login` or export AWS_ACCESS_KEY_ID...    |
| ClientError AccessDenied*, UnauthorizedOperation, | access denied to <Operation> (AWS's message):      |
| UnrecognizedClientException, ExpiredToken...      | grant it; AWS refused the credentials: refresh    |
| ClientError ResourceNotFoundException             | not found: <message>: check the name and region   |
| ClientError ValidationError "does not exist"      | (a DynamoDB table, a CloudFormation stack, ...)   |
| EndpointConnectionError, ConnectTimeoutError,     | cannot reach <url>: check --endpoint-url, the     |
| ReadTimeoutError, ConnectionClosedError           | region and the network                            |
"""

from __future__ import annotations

from botocore.exceptions import (
    ClientError,
    ConnectionClosedError,
    ConnectTimeoutError,
    EndpointConnectionError,
    NoCredentialsError,
    NoRegionError,
    PartialCredentialsError,
    ProfileNotFound,
    ReadTimeoutError,
    SSOError,
    TokenRetrievalError,
    UnauthorizedSSOTokenError,
)

_DENIED = frozenset(
    {
        "AccessDenied",
        "AccessDeniedException",
        "UnauthorizedOperation",
        "UnauthorizedAccess",
        "AuthorizationError",
        "AuthFailure",
    }
)
_BAD_CREDENTIALS = frozenset(
    {
        "UnrecognizedClientException",
        "InvalidClientTokenId",
        "InvalidAccessKeyId",
        "SignatureDoesNotMatch",
        "ExpiredToken",
        "ExpiredTokenException",
        "RequestExpired",
    }
)
NO_CREDENTIALS = (
    "no AWS credentials: set AWS_PROFILE (then `aws sso login` if it uses SSO), or export "
    "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY"
)


def describe_aws(error: BaseException) -> str | None:
    """The failure's cause and fix in one line (see the module docstring), or None if not AWS's."""
    if isinstance(error, NoRegionError):
        return "no AWS region: pass --region or set AWS_REGION"
    if isinstance(error, ProfileNotFound):
        return f"{error}: set AWS_PROFILE to a profile of ~/.aws/config (`aws configure list-profiles`)"
    if isinstance(error, (NoCredentialsError, PartialCredentialsError)):
        return NO_CREDENTIALS
    if isinstance(error, (SSOError, TokenRetrievalError, UnauthorizedSSOTokenError)):
        return f"AWS credentials could not be loaded ({error}): run `aws sso login`"
    if isinstance(error, (EndpointConnectionError, ConnectTimeoutError, ReadTimeoutError, ConnectionClosedError)):
        url = getattr(error, "kwargs", {}).get("endpoint_url", "") or ""
        return (
            f"cannot reach {url or 'the AWS endpoint'}: check --endpoint-url (AWS_ENDPOINT_URL), "
            "the region and the network"
        )
    if isinstance(error, ClientError):
        return _client_error(error)
    return None


def _client_error(error: ClientError) -> str | None:
    details = error.response.get("Error", {})
    code = str(details.get("Code") or "")
    message = str(details.get("Message") or "").strip()
    action = error.operation_name
    if code in _DENIED or code.startswith("AccessDenied"):
        return f"access denied to {action} ({message or code}): grant it to your identity, or use one that has it"
    if code in _BAD_CREDENTIALS:
        return f"AWS refused the credentials ({code}): refresh them (`aws sso login`) or fix AWS_PROFILE"
    if code in ("ResourceNotFoundException", "NoSuchEntity", "ResourceNotFound", "NotFoundException") or (
        code == "ValidationError" and "does not exist" in message
    ):
        return f"not found ({message or code}): check the name and the region (--region)"
    return None
