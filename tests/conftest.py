"""Fixture plugins shared by every test: the loopback test web and the local HBase."""

pytest_plugins = ["testweb_fixtures", "hbase_fixtures"]
