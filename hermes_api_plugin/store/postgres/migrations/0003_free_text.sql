-- Free text may hold NUL (issue 20, defect 7), which a PostgreSQL `text` value cannot: the two columns of free text
-- hold it as a JSON string literal (NUL as \u0000), as the JSON columns hold theirs (store/postgres_text.py).
UPDATE responses SET instructions = to_json(instructions)::text WHERE instructions IS NOT NULL;
UPDATE messages SET reasoning = to_json(reasoning)::text WHERE reasoning IS NOT NULL;
