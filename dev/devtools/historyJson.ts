// A workflow history in the JSON the `temporal` CLI and the Web UI write (proto JSON: enum names, int64 as
// strings), from the history object the client fetches. The SDK does the same in a function of its lib/
// internals; this uses only public entry points: the Temporal protos' root and protobufjs's ProtoJSON helper.
import type { temporal } from '@temporalio/proto';
import proto from '@temporalio/proto';
import type { Root } from 'protobufjs';
import { toJson } from 'protobufjs/ext/protojson';

const historyType = (proto as unknown as Root).lookupType('temporal.api.history.v1.History');

export function historyToJson(history: temporal.api.history.v1.IHistory): unknown {
  return toJson(historyType, historyType.fromObject(history)) as unknown;
}
