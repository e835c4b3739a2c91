// Exactly one bare address, checked before the fence: a line break could add headers or SMTP commands, a name
// or comma list more recipients. Refusing is permanent: the order must be fixed.

/** RFC 5321 §4.5.3.1: a path is at most 256 octets with its brackets, so an address at most 254. */
const MAX_ADDRESS_LENGTH = 254;
const MAX_LOCAL_PART_LENGTH = 64;
const MAX_DOMAIN_LENGTH = 253;
// RFC 5322 dot-atom; quoted local parts are refused: providers disagree on them.
const DOT_ATOM = /^[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+(?:\.[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+)*$/;
// A host name label; letters beyond ASCII are allowed for internationalised domains.
const DOMAIN_LABEL = /^[\p{L}\p{N}](?:[\p{L}\p{N}-]{0,61}[\p{L}\p{N}])?$/u;

/** Never repeats the address: the answer ends up in workflow history and logs. */
export function recipientAddressProblem(value: string): string | null {
  // eslint-disable-next-line no-control-regex -- finding control characters is the point
  if (/[\u0000-\u001f\u007f-\u009f\u2028\u2029]/.test(value)) {
    return 'contains a line break or another control character';
  }
  const address = value.trim();
  if (address === '') return 'is empty';
  if (address.length > MAX_ADDRESS_LENGTH) return `is longer than ${MAX_ADDRESS_LENGTH} characters`;
  if (/[,;]/.test(address)) return 'is a list (it contains a comma or a semicolon), not one address';
  if (/[<>"()[\]\\]/.test(address)) {
    return 'is not a bare address (it has a display name, brackets, quotes or a comment, like Name <a@example.com>)';
  }
  if (/\s/.test(address)) return 'contains spaces';
  const at = address.indexOf('@');
  if (at === -1 || at !== address.lastIndexOf('@')) return 'does not have exactly one @';
  const local = address.slice(0, at);
  const domain = address.slice(at + 1);
  if (local.length === 0 || local.length > MAX_LOCAL_PART_LENGTH || !DOT_ATOM.test(local)) {
    return `has a part before the @ that is not a plain name of at most ${MAX_LOCAL_PART_LENGTH} characters (e.g. two dots in a row)`;
  }
  const labels = domain.split('.');
  const tld = labels.at(-1) ?? '';
  if (
    domain.length > MAX_DOMAIN_LENGTH ||
    labels.length < 2 ||
    !labels.every((label) => DOMAIN_LABEL.test(label)) ||
    /^[0-9]+$/.test(tld)
  ) {
    return 'has a part after the @ that is not a domain name like example.com';
  }
  return null;
}
