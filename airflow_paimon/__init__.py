"""airflow-paimon: Airflow operators that run PySpark jobs upserting into Apache Paimon primary-key tables."""

__version__ = "0.1.0"


def get_provider_info() -> dict:
    """Entry point Airflow's ProvidersManager reads (``apache_airflow_provider``)."""
    return {
        "package-name": "airflow-paimon",
        "name": "Apache Paimon",
        "description": "Upserts into Apache Paimon primary-key tables through PySpark jobs, exactly once per DAG run.",
        "versions": [__version__],
        "connection-types": [
            {"hook-class-name": "airflow_paimon.hooks.paimon.PaimonHook", "connection-type": "paimon"},
        ],
        "hooks": [{"integration-name": "Apache Paimon", "python-modules": ["airflow_paimon.hooks.paimon"]}],
        "operators": [{"integration-name": "Apache Paimon", "python-modules": [
            "airflow_paimon.operators.paimon", "airflow_paimon.operators.compact",
            "airflow_paimon.operators.maintenance", "airflow_paimon.operators.incremental"]}],
        "sensors": [{"integration-name": "Apache Paimon", "python-modules": ["airflow_paimon.sensors.paimon"]}],
        "triggers": [{"integration-name": "Apache Paimon", "python-modules": ["airflow_paimon.triggers.paimon"]}],
        "integrations": [{"integration-name": "Apache Paimon", "external-doc-url": "https://paimon.apache.org/",
                          "tags": ["software"]}],
        "extra-links": ["airflow_paimon.links.PaimonTableLink"],
        "asset-uris": [{"schemes": ["paimon"], "handler": "airflow_paimon.assets.sanitize_uri",
                        "factory": "airflow_paimon.assets.paimon_asset",
                        "to_openlineage_converter": "airflow_paimon.assets.convert_asset_to_openlineage"}],
    }
