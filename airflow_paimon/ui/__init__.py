"""The Paimon page of the Airflow UI: a read-only view of the tables behind the ``paimon`` connections."""
