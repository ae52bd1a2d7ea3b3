"""airflow-paimon: Airflow operators that run PySpark jobs upserting into Apache Paimon primary-key tables."""

from airflow_paimon.job_env import TIMEOUTS

__version__ = "0.1.0"

# The ``paimon`` connection form, declared here so Airflow builds it without importing the hook (Airflow 3.2's
# ``conn-fields``; the hook's get_ui_field_behaviour / get_connection_form_widgets are deprecated). Each field
# is stored in the connection's extra under its name, which is what PaimonHook reads.
PAIMON_CONN_FIELDS = {
    "warehouse": {"label": "Warehouse", "description": "The catalog's warehouse URI, e.g. file:///data/warehouse "
                  "or s3://bucket/warehouse (a connection made before this form may give it as host).",
                  "schema": {"type": ["string", "null"]}},
    "catalog_options": {"label": "Catalog options", "description": "Further pypaimon catalog options as a JSON "
                        "object, e.g. {\"fs.s3.endpoint\": \"http://minio:9000\", \"fs.s3.accessKeyId\": \"...\"}.",
                        "schema": {"type": ["object", "null"]}},
    "index_root": {"label": "Index root", "description": "Where the global key index lives (default: "
                   "<warehouse>/.airflow-paimon/index, outside every table directory).",
                   "schema": {"type": ["string", "null"]}},
    "staging_root": {"label": "Staging root", "description": "Where a run stages its commit until the commit task "
                     "(default: <warehouse>/.airflow-paimon/staging).", "schema": {"type": ["string", "null"]}},
}

JOB_ENV_OPTIONS = {
    "job_python": {"description": "Interpreter of the job environment (`python -m airflow_paimon.job_env create "
                                  "PATH` makes one: PATH/bin/python). Default: this interpreter when it can import "
                                  "pypaimon, rocksdict and pyroaring. An operator's argument job_python wins, then "
                                  "its Spark connection's extra job_python (spark_default's where no task is).",
                   "version_added": "0.1.0", "type": "string", "example": "/opt/paimon-jobs/bin/python",
                   "default": None},
    "job_archive": {"description": "A packed job environment (`python -m airflow_paimon.job_env pack PATH "
                                   "ARCHIVE`) that spark-submit ships to the executors as spark.archives=ARCHIVE#env; "
                                   "the Spark connection's extra job_archive wins.", "version_added": "0.1.0",
                    "type": "string", "example": "hdfs:///envs/paimon-jobs.tar.gz", "default": None},
}

# How long Airflow's own reads of a warehouse may take before they are abandoned and reported as timed out
# (defaults: job_env.TIMEOUTS, which reads them): an unreachable object store otherwise holds them while its client
# retries (pyarrow's S3 client: 85 s).
TIMEOUT_OPTIONS = {
    "connection_test_timeout": {"description": "Seconds the Paimon connection's Test (PaimonHook.test_connection) "
                                               "waits for the warehouse before it reports a timeout.",
                                "version_added": "0.1.0", "type": "float", "example": "30",
                                "default": f"{TIMEOUTS['connection_test_timeout']:g}"},
    "ui_read_timeout": {"description": "Seconds the Paimon UI page waits for each read of a warehouse (a "
                                       "connection's tables, a table's page) before it shows a timeout.",
                        "version_added": "0.1.0", "type": "float", "example": "15",
                        "default": f"{TIMEOUTS['ui_read_timeout']:g}"},
}


def get_provider_info() -> dict:
    """Entry point Airflow's ProvidersManager reads (``apache_airflow_provider``)."""
    return {
        "package-name": "airflow-paimon",
        "name": "Apache Paimon",
        "description": "Upserts into Apache Paimon primary-key tables through PySpark jobs, exactly once per DAG run.",
        "versions": [__version__],
        "connection-types": [
            {"hook-class-name": "airflow_paimon.hooks.paimon.PaimonHook", "connection-type": "paimon",
             "hook-name": "Apache Paimon", "conn-fields": PAIMON_CONN_FIELDS,
             "ui-field-behaviour": {"hidden-fields": ["host", "schema", "login", "password", "port"],
                                    "relabeling": {}, "placeholders": {}}},
        ],
        "hooks": [{"integration-name": "Apache Paimon", "python-modules": ["airflow_paimon.hooks.paimon"]}],
        "operators": [{"integration-name": "Apache Paimon", "python-modules": [
            "airflow_paimon.operators.paimon", "airflow_paimon.operators.compact",
            "airflow_paimon.operators.maintenance", "airflow_paimon.operators.incremental",
            "airflow_paimon.operators.lifecycle"]}],
        "sensors": [{"integration-name": "Apache Paimon", "python-modules": ["airflow_paimon.sensors.paimon"]}],
        "triggers": [{"integration-name": "Apache Paimon", "python-modules": ["airflow_paimon.triggers.paimon"]}],
        "integrations": [{"integration-name": "Apache Paimon", "external-doc-url": "https://paimon.apache.org/",
                          "tags": ["software"]}],
        "extra-links": ["airflow_paimon.links.PaimonTableLink"],
        # [paimon] in airflow.cfg / AIRFLOW__PAIMON__*: where the job side runs (airflow_paimon/job_env), timeouts
        "config": {"paimon": {"description": "The job environment (everything that touches Paimon runs there) and "
                                             "how long Airflow's own reads of a warehouse may take.",
                              "options": {**JOB_ENV_OPTIONS, **TIMEOUT_OPTIONS}}},
        "asset-uris": [{"schemes": ["paimon"], "handler": "airflow_paimon.assets.sanitize_uri",
                        "factory": "airflow_paimon.assets.paimon_asset",
                        "to_openlineage_converter": "airflow_paimon.assets.convert_asset_to_openlineage"}],
    }
