from types import SimpleNamespace

import boto3
import pytest

from tests.cloud.helpers import BUCKET
from tests.helpers import moto_server


@pytest.fixture(scope="module")
def s3():
    """A real S3-compatible server (moto) on 127.0.0.1 with the results bucket, stopped after the module."""
    with moto_server(BUCKET) as endpoint:
        env = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
               "AWS_DEFAULT_REGION": "us-east-1", "AWS_REGION": "us-east-1",
               "AWS_ENDPOINT_URL_S3": endpoint, "AWS_EC2_METADATA_DISABLED": "true"}
        client = boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1",
                              aws_access_key_id="testing", aws_secret_access_key="testing")
        yield SimpleNamespace(client=client, env=env, endpoint=endpoint)
