// The messages the model is shown for a step: the profile's system prompt, the skills it may
// load (name, description and location only, XML-escaped, so a description cannot close the
// list or open tags of its own), then the conversation rebuilt from the turn's cards: the task,
// each assistant answer with its calls, and the result (or timeout) card of every call.
import { skillLocation } from '@toolmesh/skills';
import type { Card, Conversation, SkillRecord } from '@toolmesh/store';
import type { ChatMessage } from './llm.ts';

export function escapeXml(text: string): string {
  return text
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;')
    .replace(/"/g, '&quot;')
    .replace(/'/g, '&apos;');
}

export function availableSkills(skills: SkillRecord[]): string {
  const usable = skills.filter((s) => s.enabled && s.active_version !== null);
  const items = usable.map(
    (s) =>
      `<skill>\n<name>${escapeXml(s.name)}</name>\n<description>${escapeXml(s.description)}</description>\n<location>${escapeXml(skillLocation(s.name))}</location>\n</skill>`,
  );
  return `<available_skills>\n${items.join('\n')}\n</available_skills>`;
}

export function systemPrompt(profilePrompt: string, skills: SkillRecord[] | undefined): string {
  const parts = [profilePrompt.trim()];
  if (skills) parts.push(availableSkills(skills));
  return parts.filter((p) => p !== '').join('\n\n');
}

interface AssistantContent {
  role: 'assistant';
  content?: string | null;
  tool_calls?: { id: string; name: string; arguments: string }[];
}

/** The text the model sees for a call's result card; long results keep their head. */
export function resultText(card: Card | undefined, maxChars: number): string {
  if (!card) return JSON.stringify({ status: 'failed', error: { message: 'no result recorded' } });
  const { role: _role, ...content } = card.content as Record<string, unknown>;
  const text = JSON.stringify(content);
  if (text.length <= maxChars) return text;
  return `${text.slice(0, maxChars)}... [truncated: ${text.length} characters in all]`;
}

export function buildMessages(
  system: string,
  conv: Conversation,
  maxResultChars: number,
): ChatMessage[] {
  const messages: ChatMessage[] = system ? [{ role: 'system', content: system }] : [];
  for (const card of conv.cards) {
    if (card.kind !== 'message') continue;
    const c = card.content as { role?: string; content?: unknown };
    if (c.role === 'user') {
      messages.push({
        role: 'user',
        content: typeof c.content === 'string' ? c.content : JSON.stringify(c.content ?? ''),
      });
    } else if (c.role === 'assistant') {
      const a = c as AssistantContent;
      const calls = a.tool_calls ?? [];
      messages.push({
        role: 'assistant',
        content: a.content ?? null,
        ...(calls.length
          ? {
              tool_calls: calls.map((t) => ({
                id: t.id,
                type: 'function' as const,
                function: { name: t.name, arguments: t.arguments },
              })),
            }
          : {}),
      });
      for (const t of calls) {
        messages.push({
          role: 'tool',
          tool_call_id: t.id,
          content: resultText(conv.results.get(t.id), maxResultChars),
        });
      }
    }
  }
  return messages;
}
