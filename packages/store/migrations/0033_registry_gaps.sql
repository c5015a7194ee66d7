-- Smaller registry gaps (issue 20, item 6, and the per-project pin switch of item 3).
--
-- An MCP server can be switched off without deleting it. While it is off its tools are disabled
-- too; each tool it switched off carries `spec.server_disabled = true`, so switching the server
-- on again enables exactly those (a tool a user had disabled by hand stays disabled).
ALTER TABLE resource.mcp_servers ADD COLUMN enabled boolean NOT NULL DEFAULT true;

-- Registry tools carry the version of the API or server they came from (an OpenAPI import writes
-- the document's info.version) and may be deprecated, with a note for whoever still calls them.
ALTER TABLE resource.tools
  ADD COLUMN version text CHECK (version IS NULL OR length(version) BETWEEN 1 AND 100),
  ADD COLUMN deprecated boolean NOT NULL DEFAULT false,
  ADD COLUMN deprecation_message text
    CHECK (deprecation_message IS NULL OR length(deprecation_message) <= 2000);

-- A project's own settings, overriding the deployment's defaults key by key, shaped like
-- config.toml sections: {"tools": {"pin_definitions": false}}. A missing key follows the
-- deployment's configuration.
ALTER TABLE resource.projects
  ADD COLUMN settings jsonb NOT NULL DEFAULT '{}' CHECK (jsonb_typeof(settings) = 'object');
