package texts

// Command answers in chats.
const (
	HelpIntro Key = "help.intro"
	HelpOutro Key = "help.outro"

	DescHelp     Key = "cmd.help"
	DescCommands Key = "cmd.commands"
	DescStatus   Key = "cmd.status"
	DescWhoami   Key = "cmd.whoami"
	DescNew      Key = "cmd.new"
	DescStop     Key = "cmd.stop"
	DescModel    Key = "cmd.model"
	DescModels   Key = "cmd.models"
	DescThink    Key = "cmd.think"
	DescElevate  Key = "cmd.elevate"
	DescContext  Key = "cmd.context"
	DescCompact  Key = "cmd.compact"
	DescExport   Key = "cmd.export"
	DescQueue    Key = "cmd.queue"

	CommandsHeader    Key = "commands.header"
	CommandsAliases   Key = "commands.aliases"
	CommandsOwnerOnly Key = "commands.ownerOnly"
	CommandFailed     Key = "command.failed"

	StatusSession       Key = "status.session"
	StatusModel         Key = "status.model"
	StatusModelDefault  Key = "status.modelDefault"
	StatusModelOverride Key = "status.modelOverride"
	StatusFallbacks     Key = "status.fallbacks"
	StatusThinking      Key = "status.thinking"
	StatusElevated      Key = "status.elevated"
	StatusTranscript    Key = "status.transcript"
	StatusBusy          Key = "status.busy"
	// StatusTokens takes this chat's and the sender's tokens of today;
	// StatusTokensOf a count and its budget, in place of a bare count.
	StatusTokens   Key = "status.tokens"
	StatusTokensOf Key = "status.tokensOf"

	Whoami        Key = "whoami"
	WhoamiOwner   Key = "whoami.owner"
	WhoamiAllowed Key = "whoami.allowed"

	NewSession Key = "new.done"

	ModelDefault    Key = "model.default"
	ModelOverride   Key = "model.override"
	ModelReset      Key = "model.reset"
	ModelSet        Key = "model.set"
	ModelNotRef     Key = "model.notRef"
	ModelNoProvider Key = "model.noProvider"
	ModelsChain     Key = "models.chain"
	ModelsAliases   Key = "models.aliases"

	ThinkShow    Key = "think.show"
	ThinkUnknown Key = "think.unknown"
	ThinkSet     Key = "think.set"

	ContextReport Key = "context.report"

	ExportEmpty  Key = "export.empty"
	ExportHeader Key = "export.header"

	QueueCapInvalid      Key = "queue.capInvalid"
	QueueDebounceInvalid Key = "queue.debounceInvalid"
	QueueUnknown         Key = "queue.unknown"
	QueueShow            Key = "queue.show"
	QueueSetShow         Key = "queue.set"

	CompactNothing Key = "compact.nothing"
	CompactDone    Key = "compact.done"

	ElevateDenied Key = "elevate.denied"
	ElevateIsOn   Key = "elevate.isOn"
	ElevateIsOff  Key = "elevate.isOff"
	ElevateOn     Key = "elevate.on"
	ElevateOff    Key = "elevate.off"
	ElevateUsage  Key = "elevate.usage"

	StopNothing Key = "stop.nothing"
	Stopped     Key = "stop.done"
)

// What a direct chat is told when its message got no answer.
const (
	StorageFailed Key = "notice.storage"

	NoticeTurnTimeout Key = "notice.turnTimeout"
	NoticeInterrupted Key = "notice.interrupted"
	NoticeNoModel     Key = "notice.noModel"
	NoticeInternal    Key = "notice.internal"
	// NoticeTheModel names a model the failure does not name.
	NoticeTheModel Key = "notice.theModel"
	// NoticeHTTPStatus follows a model in the notices below that take a
	// second %s.
	NoticeHTTPStatus Key = "notice.httpStatus"
	NoticeRateLimit  Key = "notice.rateLimit"
	NoticeOverloaded Key = "notice.overloaded"
	NoticeTimeout    Key = "notice.timeout"
	NoticeNetwork    Key = "notice.network"
	NoticeTruncated  Key = "notice.truncated"
	NoticeServer     Key = "notice.server"
	NoticeAuth       Key = "notice.auth"
	NoticeNotFound   Key = "notice.notFound"
	NoticeQuota      Key = "notice.quota"
	NoticeInvalid    Key = "notice.invalid"
	NoticeFailed     Key = "notice.failed"

	// NoticeLimitMessages takes the cap and the time it resets at;
	// NoticeLimitTokens the day's budget and the time it resets at.
	NoticeLimitMessages Key = "notice.limitMessages"
	NoticeLimitTokens   Key = "notice.limitTokens"
)

// The web chat page, its script and its API's refusals.
const (
	WebchatModelHint     Key = "webchat.modelHint"
	WebchatDashboard     Key = "webchat.dashboard"
	WebchatDashboardHint Key = "webchat.dashboardHint"
	WebchatNewChat       Key = "webchat.newChat"
	WebchatNewChatHint   Key = "webchat.newChatHint"
	// WebchatHello greets with the page's title.
	WebchatHello Key = "webchat.hello"
	// WebchatNoModel greets a page no model answers (the preview agent
	// does) before its first message.
	WebchatNoModel     Key = "webchat.noModel"
	WebchatIntro       Key = "webchat.intro"
	WebchatKeys        Key = "webchat.keys"
	WebchatPlaceholder Key = "webchat.placeholder"
	WebchatMessage     Key = "webchat.message"
	WebchatSend        Key = "webchat.send"
	WebchatStop        Key = "webchat.stop"

	WebchatCopy           Key = "webchat.copy"
	WebchatCopyCode       Key = "webchat.copyCode"
	WebchatCopied         Key = "webchat.copied"
	WebchatCopyFailed     Key = "webchat.copyFailed"
	WebchatNewFailed      Key = "webchat.newFailed"
	WebchatWriting        Key = "webchat.writing"
	WebchatConnectionLost Key = "webchat.connectionLost"
	WebchatOffline        Key = "webchat.offline"
	// WebchatStoppedMark follows a reply cut short.
	WebchatStoppedMark Key = "webchat.stoppedMark"

	WebchatStartingUp   Key = "webchat.startingUp"
	WebchatLoadFailed   Key = "webchat.loadFailed"
	WebchatAlreadySent  Key = "webchat.alreadySent"
	WebchatShuttingDown Key = "webchat.shuttingDown"
	WebchatMerged       Key = "webchat.merged"
	WebchatStoppedEarly Key = "webchat.stoppedEarly"
	WebchatNotHandled   Key = "webchat.notHandled"
)

// The dashboard page, its script and its API's refusals.
const (
	DashTitle          Key = "dashboard.title"
	DashConnecting     Key = "dashboard.connecting"
	DashWebchat        Key = "dashboard.webchat"
	DashStatus         Key = "dashboard.status"
	DashAccounts       Key = "dashboard.accounts"
	DashNoAccounts     Key = "dashboard.noAccounts"
	DashRates          Key = "dashboard.rates"
	DashMessages       Key = "dashboard.messages"
	DashReplies        Key = "dashboard.replies"
	DashErrors         Key = "dashboard.errors"
	DashNone           Key = "dashboard.none"
	DashDecisions      Key = "dashboard.decisions"
	DashDecisionsHint  Key = "dashboard.decisionsHint"
	DashFilter         Key = "dashboard.filter"
	DashFilterLabel    Key = "dashboard.filterLabel"
	DashNoTraces       Key = "dashboard.noTraces"
	DashChat           Key = "dashboard.chat"
	DashShow           Key = "dashboard.show"
	DashPickChat       Key = "dashboard.pickChat"
	DashTraceFailed    Key = "dashboard.traceFailed"
	DashLive           Key = "dashboard.live"
	DashReconnecting   Key = "dashboard.reconnecting"
	DashVersion        Key = "dashboard.version"
	DashStarted        Key = "dashboard.started"
	DashUptime         Key = "dashboard.uptime"
	DashDaysHours      Key = "dashboard.daysHours"
	DashHoursMinutes   Key = "dashboard.hoursMinutes"
	DashMinutesSeconds Key = "dashboard.minutesSeconds"
	DashSeconds        Key = "dashboard.seconds"
	DashConfig         Key = "dashboard.config"
	DashConfigErrors   Key = "dashboard.configErrors"
	DashConfigWarnings Key = "dashboard.configWarnings"
	DashConfigOK       Key = "dashboard.configOK"
	DashConfigUnknown  Key = "dashboard.configUnknown"
	DashQueues         Key = "dashboard.queues"
	DashStateUnknown   Key = "dashboard.stateUnknown"
	DashBot            Key = "dashboard.bot"
	DashImplementation Key = "dashboard.implementation"
	DashLastError      Key = "dashboard.lastError"
	DashHint           Key = "dashboard.hint"
	DashLastPong       Key = "dashboard.lastPong"
	DashRatesSummary   Key = "dashboard.ratesSummary"
	DashNow            Key = "dashboard.now"
	DashMinutesAgo     Key = "dashboard.minutesAgo"
	DashBar            Key = "dashboard.bar"
	DashStatusFailed   Key = "dashboard.statusFailed"
	DashSession        Key = "dashboard.session"
	DashSessionKey     Key = "dashboard.sessionKey"
	DashModel          Key = "dashboard.model"
	DashTurns          Key = "dashboard.turns"
	DashUpdated        Key = "dashboard.updated"
	DashNoSession      Key = "dashboard.noSession"
	DashWindow         Key = "dashboard.window"
	DashWindowOpen     Key = "dashboard.windowOpen"
	DashWindowFlush    Key = "dashboard.windowFlush"
	DashNoWindow       Key = "dashboard.noWindow"
	DashHistory        Key = "dashboard.history"
	DashEmpty          Key = "dashboard.empty"
	DashDigests        Key = "dashboard.digests"
	DashSettings       Key = "dashboard.settings"
	DashRecent         Key = "dashboard.recent"
	DashNoTraced       Key = "dashboard.noTraced"
	// DashTokens heads today's token use, with the day; DashTokensUsers
	// and DashTokensChats head its two lists.
	DashTokens         Key = "dashboard.tokens"
	DashTokensUsers    Key = "dashboard.tokensUsers"
	DashTokensChats    Key = "dashboard.tokensChats"
	DashChatFailed     Key = "dashboard.chatFailed"
	DashTraceReadError Key = "dashboard.traceReadError"
)
