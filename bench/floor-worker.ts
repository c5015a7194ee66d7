// The floor of the roundtrip benchmark, run as its own process like the skills service: a bare
// JetStream consume of each message, one Postgres insert, an ack and a core-NATS reply. This is
// the least any design on JetStream + Postgres must do per call.
import { AckPolicy, jetstream, jetstreamManager } from '@nats-io/jetstream';
import { connect, credsAuthenticator } from '@nats-io/transport-node';
import pg from 'pg';

const [natsUrl, dbUrl, stream, subject, replyPrefix, concurrencyArg] = process.argv.slice(2) as [
  string,
  string,
  string,
  string,
  string,
  string,
];
const concurrency = Number(concurrencyArg);
// BENCH_NATS_CREDS: the .creds text of a user, when the server runs with authentication.
const creds = process.env['BENCH_NATS_CREDS'];
const nc = await connect({
  servers: natsUrl,
  ...(creds ? { authenticator: credsAuthenticator(new TextEncoder().encode(creds)) } : {}),
});
const jsm = await jetstreamManager(nc);
await jsm.consumers.add(stream, {
  durable_name: 'floor',
  ack_policy: AckPolicy.Explicit,
  filter_subject: subject,
});
const pool = new pg.Pool({ connectionString: dbUrl, max: 10 });
await pool.query(
  'CREATE TABLE IF NOT EXISTS bench_floor (id text PRIMARY KEY, body jsonb NOT NULL)',
);
const consumer = await jetstream(nc).consumers.get(stream, 'floor');
const messages = await consumer.consume({ max_messages: concurrency });
process.stdout.write('ready\n');
for await (const m of messages) {
  const body = m.string();
  const id = m.headers?.get('Nats-Msg-Id') ?? String(m.seq);
  void pool
    .query({
      name: 'floor_insert',
      text: 'INSERT INTO bench_floor (id, body) VALUES ($1, $2) ON CONFLICT DO NOTHING',
      values: [id, body],
    })
    .then(() => {
      m.ack();
      nc.publish(`${replyPrefix}.${id}`, body);
    });
}
