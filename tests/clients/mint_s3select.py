"""Runs minio/mint's s3select groups one by one and reports every case, for
test_peer_suites.py. Run with mint's `run/core/s3select` as the working directory.

mint's own runner (`tests.py`) stops at the first group that fails, and a CSV group stops at
its first failing case. Here every group runs, and each CSV case's call (`test_sql_api`, the
one function the CSV groups check through) is recorded instead of ending its group. The SQL
groups count their own cases, which is read from their report. Output: one JSON object per
line, {"group", "case", "error"} for a CSV case and {"group", "total", "success"} for a SQL
group, among the groups' own reports (which have no "group").
"""

import json
import os
import sys

sys.path.insert(0, os.getcwd())

# mint's folder holds a `csv.py` of its own; as in mint, it is the one imported.
import csv as mint_csv  # noqa: E402
import sql_ops  # noqa: E402
from minio import Minio  # noqa: E402
from utils import LogOutput  # noqa: E402

CSV_GROUPS = ["test_csv_input_custom_quote_char", "test_csv_output_custom_quote_char"]
SQL_GROUPS = ["test_sql_operators", "test_sql_operators_precedence",
              "test_sql_functions_agg_cond_conv", "test_sql_functions_date",
              "test_sql_functions_string", "test_sql_datatypes", "test_sql_select",
              "test_sql_select_json", "test_sql_select_csv_no_header"]


def main():
    client = Minio(endpoint=os.environ["SERVER_ENDPOINT"], access_key=os.environ["ACCESS_KEY"],
                   secret_key=os.environ["SECRET_KEY"], secure=False)
    group = None
    check = mint_csv.test_sql_api

    def recorded(test_name, *args):
        try:
            check(test_name, *args)
            error = None
        except Exception as e:  # the case's failure, recorded; the group goes on
            error = str(e)
        print(json.dumps({"group": group, "case": test_name, "error": error}), flush=True)

    mint_csv.test_sql_api = recorded
    for group in CSV_GROUPS:
        getattr(mint_csv, group)(client, LogOutput(client.select_object_content, group))
    for group in SQL_GROUPS:
        log = LogOutput(client.select_object_content, group)
        getattr(sql_ops, group)(client, log)
        # mint's report drops counts of zero from `args`.
        print(json.dumps({"group": group, "total": log.args.get("total_tests", 0),
                          "success": log.args.get("total_success", 0)}), flush=True)


if __name__ == "__main__":
    main()
