-- Lists (the inbox, history, the widget) show a hold on one line without reading its arguments, which
-- may be a megabyte each: a bounded summary of them and their size are kept beside them at submission.
-- Holds stored before have no summary; lists read the arguments of those only while they are small.
ALTER TABLE holds ADD COLUMN arguments_summary TEXT;
ALTER TABLE holds ADD COLUMN arguments_size INTEGER;
UPDATE holds SET arguments_size = length(arguments);
