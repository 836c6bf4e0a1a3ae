from types import SimpleNamespace

import boto3
import pytest
from moto.server import ThreadedMotoServer

from tests.cloud.helpers import BUCKET


@pytest.fixture(scope="module")
def s3():
    """A real S3-compatible server (moto) on 127.0.0.1 with the results bucket, stopped after the module."""
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    endpoint = f"http://{host}:{port}"
    env = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
           "AWS_DEFAULT_REGION": "us-east-1", "AWS_REGION": "us-east-1",
           "AWS_ENDPOINT_URL_S3": endpoint, "AWS_EC2_METADATA_DISABLED": "true"}
    client = boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1",
                          aws_access_key_id="testing", aws_secret_access_key="testing")
    client.create_bucket(Bucket=BUCKET)
    try:
        yield SimpleNamespace(client=client, env=env, endpoint=endpoint)
    finally:
        server.stop()
