-- The registry's built-in tools: a file system per project (builtin.read_file, write_file,
-- list_files and the /files routes) and searchable documents (builtin.search_documents,
-- get_document and the /documents routes). Both are the project's, shared by its agents and kept
-- across sandboxes; neither is visible to another project.
CREATE TABLE state.project_files (
  project_id text NOT NULL REFERENCES resource.projects ON DELETE CASCADE,
  -- Normalised: a leading "/", no "." or ".." segments, no empty segments.
  path       text NOT NULL CHECK (path LIKE '/_%'),
  content    text NOT NULL,
  size       integer NOT NULL CHECK (size >= 0),
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (project_id, path)
);

CREATE TABLE state.documents (
  project_id text NOT NULL REFERENCES resource.projects ON DELETE CASCADE,
  doc_id     text NOT NULL,
  collection text NOT NULL DEFAULT 'default',
  title      text NOT NULL DEFAULT '',
  body       text NOT NULL,
  metadata   jsonb NOT NULL DEFAULT '{}',
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now(),
  -- English stemming ("invoices" finds "invoice"); the title weighs more than the body.
  tsv        tsvector GENERATED ALWAYS AS (
    setweight(to_tsvector('english', title), 'A') || setweight(to_tsvector('english', body), 'B')
  ) STORED,
  PRIMARY KEY (project_id, doc_id)
);
CREATE INDEX documents_tsv ON state.documents USING gin (tsv);
CREATE INDEX documents_collection ON state.documents (project_id, collection, doc_id);
