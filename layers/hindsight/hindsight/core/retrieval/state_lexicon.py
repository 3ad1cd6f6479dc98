"""The values of the attributes whose values are common words, in English and Chinese.

An attribute's value is either a name (where one lives or works, a partner, a manager, a
car or phone, a school, a bank, a doctor, a team: ``NAMED``) or a word of a closed class:
a diet, a sport, a language, a pet, a way to commute, a drink, a dish, a hobby, a hair
colour, an instrument, a time of day. ``core/retrieval/state_values.py`` reads a statement's value
of such an attribute from these lists only, so that a word of another kind ("piano"
beside where one lives, "Friday" beside a partner) is never taken for a new value. The
lists are general vocabulary of each kind, not the words of any dev set.

It also holds the cue words ``core/states.py`` reads a statement's stance by: a change
("now", "switched", "换成"), an end ("quit", "不再"), an addition ("also", "又"), a value said
to be the only one, a wish or plan ("if", "我想"), a state of long ago ("as a kid", "小时候"),
what holds now, and a habit ("every morning", "每天").
"""

from __future__ import annotations

import re

NAMED = frozenset(
    {
        "residence",
        "work",
        "partner",
        "vehicle",
        "manager",
        "phone",
        "studies",
        "bank",
        "doctor",
        "team",
    }
)


def _en(words: str) -> str:
    return "|".join(sorted((w.replace("_", " ") for w in words.split()), key=len, reverse=True))


def _zh(words: str) -> str:
    return "|".join(sorted(words.split(), key=len, reverse=True))


_DIET_EN = _en(
    "keto paleo vegan vegetarian pescatarian carnivore flexitarian gluten-free dairy-free "
    "low-carb low-fat high-protein whole30 raw_food mediterranean intermittent_fasting "
    "plant-based halal kosher atkins"
)
_SPORT_EN = _en(
    "running jogging cycling rowing swimming climbing bouldering tennis squash badminton "
    "pilates yoga boxing kickboxing crossfit weightlifting lifting spinning football soccer "
    "basketball volleyball hiking dancing karate judo taekwondo fencing golf skating "
    "skiing surfing rugby cricket hockey netball triathlon zumba barre"
)
_DAYS_EN = _en(
    "monday mondays tuesday tuesdays wednesday wednesdays thursday thursdays friday fridays "
    "saturday saturdays sunday sundays weekends weekdays"
)
_LANGUAGE_EN = _en(
    "english french german spanish italian portuguese japanese korean chinese mandarin "
    "cantonese arabic russian hindi dutch swedish norwegian danish finnish turkish greek "
    "polish czech hebrew thai vietnamese indonesian swahili urdu bengali persian ukrainian"
)
_PET_EN = _en(
    "dog cat puppy kitten beagle labrador corgi poodle terrier spaniel husky dachshund "
    "retriever bulldog pug collie greyhound whippet schnauzer chihuahua parrot budgie "
    "cockatiel canary rabbit bunny tortoise turtle hamster gerbil guinea_pig goldfish "
    "ferret snake lizard gecko chinchilla rat mouse hedgehog horse pony"
)
_COMMUTE_EN = _en(
    "bus subway metro underground tube train tram bike bicycle e-bike scooter e-scooter "
    "car carpool walk walking ferry motorbike motorcycle cycle cycling taxi shuttle moped "
    "skateboard"
)
_DRINK_EN = _en(
    "tea coffee black_coffee espresso latte cappuccino flat_white cold_brew americano "
    "mocha macchiato matcha decaf chai green_tea black_tea herbal_tea oolong juice "
    "orange_juice smoothie hot_chocolate cocoa soy_milk oat_milk milk kombucha water"
)
_FOOD_EN = _en(
    "pad_thai tacos taco burritos burrito lasagne lasagna pizza pasta spaghetti ramen "
    "sushi sashimi pho paella curry biryani dumplings dim_sum hot_pot noodles risotto "
    "steak burgers burger fish_and_chips falafel hummus kebab shawarma tapas gnocchi "
    "moussaka goulash pierogi enchiladas nachos ceviche bibimbap kimchi tempura udon "
    "laksa rendang satay croissants pancakes waffles fried_chicken roast_chicken "
    "mac_and_cheese"
)
_HOBBY_EN = _en(
    "photography gardening painting chess woodworking birdwatching bird-watching pottery "
    "baking knitting crochet sewing quilting hiking fishing reading cooking drawing "
    "sketching writing calligraphy origami gaming video_games board_games puzzles "
    "stamp_collecting embroidery scrapbooking astronomy geocaching camping sailing "
    "kayaking surfing singing dancing climbing running cycling"
)
_COLOUR_EN = _en(
    "red blue green black white grey gray silver yellow orange purple pink brown blonde "
    "blond ginger auburn platinum chestnut copper burgundy teal lilac lavender violet "
    "turquoise caramel honey"
)
_INSTRUMENT_EN = _en(
    "guitar bass_guitar bass electric_guitar piano keyboard violin viola cello double_bass "
    "drums drum_kit ukulele flute saxophone sax trumpet trombone clarinet oboe bassoon "
    "harp accordion harmonica banjo mandolin tuba french_horn harpsichord organ"
)
_TIME_EN = r"\d{1,2}(?:[:.]\d{2})?\s*(?:am|pm|a\.m\.|p\.m\.)|\d{1,2}[:.]\d{2}|midnight|noon|dawn"

_DIET_ZH = _zh("生酮 地中海 低碳水 高蛋白 素食 吃素 纯素 轻断食 无麸质 低脂 清真 全素 蛋奶素")
_SPORT_ZH = _zh(
    "跑步 慢跑 骑行 划船 游泳 攀岩 网球 羽毛球 乒乓球 普拉提 瑜伽 拳击 举重 动感单车 足球 篮球 "
    "排球 徒步 跳舞 空手道 柔道 跆拳道 击剑 高尔夫 滑冰 滑雪 冲浪 太极 跳绳 健身操"
)
_DAYS_ZH = r"(?<!一)(?:周|星期|礼拜)[一二三四五六日天](?!次)|周末|工作日"
_LANGUAGE_ZH = _zh(
    "英语 日语 法语 德语 韩语 西班牙语 粤语 普通话 意大利语 俄语 阿拉伯语 葡萄牙语 泰语 越南语 "
    "荷兰语 瑞典语 希腊语 土耳其语 印地语 波兰语 印尼语 马来语"
)
_PET_ZH = _zh(
    "猫 狗 小狗 小猫 鹦鹉 兔子 乌龟 仓鼠 金鱼 橘猫 柯基 泰迪 金毛 哈士奇 柴犬 布偶猫 英短 比格 "
    "拉布拉多 边牧 博美 蜥蜴 蛇 龙猫 八哥 豚鼠 刺猬"
)
_COMMUTE_ZH = _zh(
    "地铁 公交 班车 骑车 开车 步行 走路 打车 电动车 自行车 轮渡 轻轨 拼车 摩托车 火车"
)
_DRINK_ZH = _zh(
    "咖啡 绿茶 红茶 奶茶 拿铁 美式 乌龙 豆浆 牛奶 果汁 普洱 花茶 冷萃 卡布奇诺 抹茶 燕麦奶 "
    "白开水 茶"
)
_FOOD_ZH = _zh(
    "火锅 饺子 小龙虾 烤鸭 螺蛳粉 麻辣烫 烧烤 拉面 寿司 披萨 牛排 汉堡 包子 馄饨 米线 凉皮 "
    "酸菜鱼 水煮鱼 红烧肉 宫保鸡丁 麻婆豆腐 煎饼果子 肠粉 烤肉 炸鸡 串串 冒菜 刀削面 热干面 "
    "炸酱面 牛肉面 兰州拉面 鱼香肉丝 糖醋排骨 北京烤鸭 生煎 小笼包 烧麦"
)
_HOBBY_ZH = _zh(
    "书法 钓鱼 下围棋 围棋 下象棋 象棋 画水彩 水彩 画画 摄影 拍照 园艺 养花 烘焙 编织 织毛衣 徒步 "
    "陶艺 读书 看书 做饭 写作 剪纸 十字绣 露营 登山 唱歌 跳舞 弹琴 集邮 拼图 玩游戏 打游戏 "
    "手工 木工 观鸟 爬山 骑行 跑步"
)
_COLOUR_ZH = _zh(
    "红色 蓝色 绿色 黑色 白色 灰色 银色 黄色 紫色 粉色 棕色 金色 栗色 酒红色 亚麻色 "
    "蓝灰色 奶茶色 橙色 青色"
)
_INSTRUMENT_ZH = _zh(
    "小提琴 大提琴 中提琴 古筝 架子鼓 钢琴 吉他 电吉他 贝斯 二胡 琵琶 笛子 长笛 萨克斯 尤克里里 "
    "手风琴 单簧管 小号 长号 竖琴 扬琴 葫芦丝 口琴"
)
_TIME_ZH = r"[零一二三四五六七八九十两\d]{1,3}点(?:半|[零一二三四五六七八九十\d]{1,3}分?)?"


def _compile_en(pattern: str) -> re.Pattern[str]:
    return re.compile(rf"(?<![\w-])(?:{pattern})(?![\w-])", re.IGNORECASE)


_EN = {
    "diet": _DIET_EN,
    "exercise": _SPORT_EN,
    "exercise_days": _DAYS_EN,
    "language": _LANGUAGE_EN,
    "pets": _PET_EN,
    "commute": _COMMUTE_EN,
    "drink": _DRINK_EN,
    "food": _FOOD_EN,
    "hobby": _HOBBY_EN,
    "hair": _COLOUR_EN,
    "instrument": _INSTRUMENT_EN,
    "sleep": _TIME_EN,
}
_EN["favourite"] = "|".join(_EN[a] for a in ("food", "drink", "hobby", "exercise", "hair"))
_ZH = {
    "diet": _DIET_ZH,
    "exercise": _SPORT_ZH,
    "exercise_days": _DAYS_ZH,
    "language": _LANGUAGE_ZH,
    "pets": _PET_ZH,
    "commute": _COMMUTE_ZH,
    "drink": _DRINK_ZH,
    "food": _FOOD_ZH,
    "hobby": _HOBBY_ZH,
    "hair": _COLOUR_ZH,
    "instrument": _INSTRUMENT_ZH,
    "sleep": _TIME_ZH,
}
_ZH["favourite"] = "|".join(_ZH[a] for a in ("food", "drink", "hobby", "exercise", "hair"))

LEXICON_EN: dict[str, re.Pattern[str]] = {a: _compile_en(p) for a, p in _EN.items()}
LEXICON_ZH: dict[str, re.Pattern[str]] = {a: re.compile(p) for a, p in _ZH.items()}
# Chinese values written by a pattern, not a word list: whole as they match
PATTERNED_ZH = re.compile(f"(?:{_DAYS_ZH}|{_TIME_ZH})$")


# --- cue words of a statement's stance (``core/states.py``) -----------------------------

# a statement that the value is the only one ("my only pet", "my main hobby", "唯一的宠物"):
# a multi-valued attribute then changes without a change cue
EXCLUSIVE_CUES = (
    re.compile(
        r"\b(?:only|main|one and only|just one|my instrument|my one|all my|every spare|"
        r"every free|nothing beats|is my (?:hobby|sport|workout))\b",
        re.IGNORECASE,
    ),
    re.compile(r"唯一|只养|只学|只喝|只玩|主要|最大的|全给了|全部"),
)
CHANGE_CUES = (
    re.compile(
        r"\b(?:now|nowadays|these days|currently|moved|relocated|switched|changed|no longer|"
        r"anymore|any more|instead|new|since|quit|left|became|started|took over|replaced|"
        r"sold|broke up|from (?:this|next|now)|gave up|stopped|finally)\b",
        re.IGNORECASE,
    ),
    re.compile(
        r"现在|如今|目前|换成|换了|改成|改为|改到|不再|已经不|搬到|搬家|新的|最近|开始|辞职|离职|"
        r"跳槽|分手|以后|调整|取代|代替|不[喝吃用开坐骑学养练打玩听看住去干做抽弹拉]了"
    ),
)
# a question about the present state, whatever it names ("now", "currently", "现在")
CURRENT_CUES = (
    re.compile(r"\b(?:now|nowadays|currently|these days|at present|still|anymore)\b", re.I),
    re.compile(r"现在|目前|如今|眼下|还在|最近"),
)
ADDITIVE_CUES = (
    re.compile(
        r"\b(?:also|another|second|third|too|as well|in addition|added|plus|both)\b",
        re.IGNORECASE,
    ),
    re.compile(r"又|也|另一|第二|第三|再养|还有|两只|两个"),
)
# a newer statement saying that the older state ended: it may name the older value and
# still replace it ("I quit Globex and joined Initech", "我和小雨分手了")
ENDED_CUES = (
    re.compile(
        r"\b(?:quit|left|no longer|not \w+ any ?more|broke up|split up|divorced|sold|replaced|"
        r"instead of|gave up|given up|giving up|dropped|ditched|stopped|rehomed|gave away|"
        r"traded in|closed|cancell?ed|moved out of|moved away from|transferred from|resigned|"
        r"handed in (?:my|the) (?:notice|badge|resignation|keys)|laid off|moved on from|"
        r"(?:switched|swapped|changed|moved)(?: \w+){0,3} (?:from|for)|bored of|tired of|"
        r"from \w+(?: \w+)? to)\b",
        re.IGNORECASE,
    ),
    re.compile(
        r"不再|已经不|分手|离婚|辞职|离职|辞掉|卖了|卖掉|换掉|换成|改成|改为|改学|转学|放弃|腻了|送给了|"
        r"送人|排第二|不[喝吃用开坐骑学养练打玩听看住去干做抽弹拉]了|改到|换到|从.{1,8}(?:换|改|搬|转)|改[喝吃用开坐骑学养练打玩听看住]"
    ),
)
# a newer statement that wishes, plans or supposes ("If I moved to Galway", "I'd love to
# live in Denver", "我想搬到大理", "要是能去腾讯") or tells only of long ago ("I lived in
# Edinburgh as a kid", "小时候我住在哈尔滨", "my first car was") states no present value
MODAL_CUES = (
    re.compile(
        r"\b(?:if|unless|would|should|might|maybe|perhaps|wish|hope to|hoping to|"
        r"(?:thinking|dreaming) (?:about|of)|consider(?:ing)?|plan(?:ning)? to|"
        r"want(?:ing)? to|one day|someday|some day|(?:i|we)'d|(?:i|we)'ll|(?:i|we) will)\b",
        re.IGNORECASE,
    ),
    re.compile(
        r"如果|要是|假如|假设|万一|想要|我想|打算|计划|考虑|希望|但愿|要不要|也许|或许|说不定|将来|哪天"
    ),
)
PAST_CUES = (
    re.compile(
        r"\b(?:as a (?:kid|child|teen(?:ager)?|student|boy|girl)|when (?:i|we) (?:was|were)|"
        r"back (?:in|then|when)|years ago|(?<!getting )(?<!got )(?:i|we) used to|"
        r"my first \w+ (?:was|were)|growing up|in my (?:teens|twenties|youth)|formerly|"
        r"in (?:college|school|uni|university),)\b",
        re.IGNORECASE,
    ),
    re.compile(
        r"小时候|(?:大学|上学|读书|年轻|小的)(?:的)?时候|当年|那时候?|那会儿|曾经|以前|"
        r"第一(?:辆|份|个|台|部)|[住干做待开打用学]过"
    ),
)
# what says a statement of the past also tells the present ("以前住北京，现在住上海")
NOW_CUES = (
    re.compile(r"\b(?:now|nowadays|currently|these days|at present)\b", re.IGNORECASE),
    re.compile(r"现在|目前|如今|眼下"),
)
# a habit ("three sessions of rowing a week", "每天早上一杯燕麦奶") states the attribute its
# value is a word of, whether or not it names the attribute (``HABITS``)
HABIT_CUES = (
    re.compile(
        r"\b(?:every (?:day|morning|evening|night|week|weekend)|each (?:day|morning|week)|"
        r"a (?:day|week|month)|daily|weekly|most (?:days|mornings|evenings|weekends))\b",
        re.IGNORECASE,
    ),
    re.compile(r"每天|每周|每晚|每早|每个?(?:星期|礼拜|月)|天天|一周.{0,3}次|平时|一般"),
)
HABITS = ("drink", "exercise", "commute", "diet", "language", "instrument")
